import { useEffect, useState } from 'preact/hooks'
import { api, type Commission, money, type Statement } from '../api'
import { html } from '../html'
import { CommissionRows } from './commissions'

const day = (s: number | null) => (s === null ? '–' : new Date(s * 1000).toISOString().slice(0, 10))

/** What each closed period owes: its totals and status, newest first; a statement opens its rows. */
export function StatementsPage() {
  const [rows, setRows] = useState<Statement[] | null>(null)
  const [error, setError] = useState('')
  useEffect(() => {
    api<{ rows: Statement[] }>('/api/affiliate/statements').then(
      (r) => setRows(r.rows),
      (e) => setError(e.message),
    )
  }, [])
  return html`<section>
    <header class="bar"><h1>Statements</h1></header>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${
      !rows
        ? !error && html`<p aria-busy="true">Loading…</p>`
        : html`<table data-testid="statements">
      <thead><tr><th scope="col">Period</th><th scope="col">Amount</th><th scope="col">Rows</th><th scope="col">Status</th><th scope="col">Paid</th><th scope="col">Reference</th></tr></thead>
      <tbody>${
        rows.length === 0
          ? html`<tr><td colspan="6">No statements yet: one is made when a month is closed</td></tr>`
          : rows.map(
              (s) => html`<tr>
          <td><a href=${`/statements/${s.id}`} data-testid=${`statement-${s.period}`}>${s.period}</a></td>
          <td>${s.totals.map(money).join(', ') || '–'}</td><td>${s.rows}</td><td>${s.status}</td>
          <td>${day(s.paid_time)}</td><td>${s.payment_reference}</td>
        </tr>`,
            )
      }</tbody>
    </table>`
    }
  </section>`
}

/** One statement and the commission rows of its period. */
export function StatementPage({ id }: { id: string }) {
  const [s, setS] = useState<Statement | null>(null)
  const [rows, setRows] = useState<Commission[]>([])
  const [next, setNext] = useState<string | null>(null)
  const [error, setError] = useState('')
  const load = async (cursor?: string) => {
    try {
      const r = await api<{ statement: Statement; rows: Commission[]; next_cursor: string | null }>(
        `/api/affiliate/statements/${id}?limit=200${cursor ? `&cursor=${cursor}` : ''}`,
      )
      setS(r.statement)
      setRows((old) => (cursor ? [...old, ...r.rows] : r.rows))
      setNext(r.next_cursor)
    } catch (e) {
      setError((e as Error).message)
    }
  }
  useEffect(() => {
    void load()
  }, [id])
  return html`<section>
    <header class="bar"><h1>Statement ${s?.period ?? ''}</h1><a href="/statements">All statements</a>
      <a class="csv" href=${`/api/affiliate/statements/${id}?format=csv`} download data-testid="csv">Download CSV</a></header>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${
      s &&
      html`<dl class="rates">
        <div><dt>Amount</dt><dd data-testid="statement-total">${s.totals.map(money).join(', ') || '–'}</dd></div>
        <div><dt>Status</dt><dd data-testid="statement-status">${s.status}</dd></div>
        <div><dt>Approved</dt><dd>${day(s.approved_time)}</dd></div>
        <div><dt>Paid</dt><dd>${day(s.paid_time)}${s.payment_reference ? ` (${s.payment_reference})` : ''}</dd></div>
      </dl>
      <${CommissionRows} rows=${rows} />
      <p class="count" data-testid="row-count">${rows.length} row${rows.length === 1 ? '' : 's'}${next ? ' so far' : ''}</p>
      ${next && html`<button type="button" onClick=${() => load(next)}>Load more</button>`}`
    }
  </section>`
}
