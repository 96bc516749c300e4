import { type Commission, money } from '../api'
import { html } from '../html'
import { usePages } from './paged'
import { RangePicker } from './range'

const COMMISSION_KINDS = [
  ['', 'All kinds'],
  ['cpa', 'CPA'],
  ['cpa_reversal', 'CPA reversals'],
  ['revshare', 'RevShare'],
  ['revshare_reversal', 'RevShare reversals'],
  ['tier_adjustment', 'Tier adjustments'],
  ['sub_affiliate', 'Sub-affiliates'],
] as const

const when = (s: number) => new Date(s * 1000).toISOString().replace('T', ' ').slice(0, 16)

/** Commission rows as a table (earnings, a statement). */
export function CommissionRows({ rows }: { rows: Commission[] }) {
  return html`<table data-testid="commission-rows">
    <thead><tr><th scope="col">Time (UTC)</th><th scope="col">Kind</th><th scope="col">Customer</th><th scope="col">Amount</th>
      <th scope="col">Basis</th><th scope="col">Rate</th><th scope="col">Period</th><th scope="col">Plan</th><th scope="col">Facts</th></tr></thead>
    <tbody>${rows.map(
      (r) => html`<tr>
        <td>${when(r.event_time)}</td><td>${r.kind}</td><td>${r.customer_id || '–'}</td>
        <td>${money(r)}</td><td>${money({ amount: r.basis, currency: r.currency })}</td><td>${r.rate ? `${r.rate} %` : '–'}</td>
        <td>${r.period}${r.corrects ? ` (corrects ${r.corrects})` : ''}</td><td>${r.plan_id ? `#${r.plan_id} v${r.plan_version}` : '–'}</td>
        <td>${r.facts.join(', ')}</td>
      </tr>`,
    )}</tbody>
  </table>`
}

/** The commission rows behind an earnings figure: a kind, a range or a period, newest first. */
export function CommissionsPage({
  kind,
  period,
  range,
  onFilter,
}: {
  kind: string
  period: string
  range: string
  onFilter: (q: string) => void
}) {
  const filter = `${period ? `period=${period}` : range}${kind ? `&kind=${kind}` : ''}`
  const { rows, next, loading, error, more } = usePages<Commission>(
    (cursor) => `/api/affiliate/commissions?${filter}${cursor ? `&cursor=${cursor}` : ''}`,
  )
  const query = (k: string, r: string) => `${k ? `kind=${k}&` : ''}${period ? `period=${period}` : r}`
  return html`<section>
    <header class="bar">
      <h1>Commissions${period ? ` of ${period}` : ''}</h1>
      <label>Kind <select value=${kind} data-testid="commission-kind" onChange=${(e: Event) => onFilter(query((e.target as HTMLSelectElement).value, range))}>
        ${COMMISSION_KINDS.map(([v, l]) => html`<option value=${v}>${l}</option>`)}
      </select></label>
      ${period ? html`<a href=${`/commissions?${range}`}>Any period</a>` : html`<${RangePicker} value=${range} onChange=${(r: string) => onFilter(query(kind, r))} />`}
      <a class="csv" href=${`/api/affiliate/commissions?${filter}&format=csv`} download data-testid="csv">Download CSV</a>
    </header>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <${CommissionRows} rows=${rows} />
    <p class="count" data-testid="row-count">${rows.length} row${rows.length === 1 ? '' : 's'}${next ? ' so far' : ''}</p>
    ${next && html`<button type="button" onClick=${more} disabled=${loading}>Load more</button>`}
    ${loading && html`<p aria-busy="true">Loading…</p>`}
  </section>`
}
