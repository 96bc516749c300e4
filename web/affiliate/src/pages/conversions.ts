import { html } from '../html'
import { usePages } from './paged'
import { RangePicker } from './range'

const KINDS = [
  ['', 'All conversions'],
  ['clicks', 'Clicks'],
  ['registration', 'Registrations'],
  ['kyc_approval', 'KYC approvals'],
  ['first_deposit', 'First deposits'],
  ['active_trader', 'Active traders'],
  ['deposit', 'Deposits'],
  ['deposit_reversal', 'Refunds and chargebacks'],
] as const

type Row = Record<string, string | number | boolean | null | Record<string, string>>
const when = (s: unknown) =>
  typeof s === 'number' ? new Date(s * 1000).toISOString().replace('T', ' ').slice(0, 16) : ''

/** click_id and sub1..sub5 as the affiliate's tracker set them. */
const subIds = (v: Record<string, string> | undefined) =>
  Object.entries(v ?? {})
    .filter(([k]) => k === 'click_id' || /^sub[1-5]$/.test(k))
    .map(([k, x]) => `${k}=${x}`)
    .join(' ')

export function ConversionsPage({
  kind,
  range,
  onFilter,
}: {
  kind: string
  range: string
  onFilter: (k: string, r: string) => void
}) {
  const { rows, next, loading, error, more } = usePages<Row>((cursor) =>
    kind === 'clicks'
      ? `/api/affiliate/clicks?${range}${cursor ? `&cursor=${cursor}` : ''}`
      : `/api/affiliate/conversions?${range}${kind ? `&kind=${kind}` : ''}${cursor ? `&cursor=${cursor}` : ''}`,
  )
  return html`<section>
    <header class="bar">
      <h1>Conversions</h1>
      <label>Kind <select value=${kind} data-testid="kind" onChange=${(e: Event) => onFilter((e.target as HTMLSelectElement).value, range)}>
        ${KINDS.map(([v, l]) => html`<option value=${v}>${l}</option>`)}
      </select></label>
      <${RangePicker} value=${range} onChange=${(r: string) => onFilter(kind, r)} />
    </header>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <table data-testid="rows">
      ${
        kind === 'clicks'
          ? html`<thead><tr><th scope="col">Time (UTC)</th><th scope="col">Source</th><th scope="col">Link</th><th scope="col">Landing</th><th scope="col">Sub-ids</th><th scope="col">Unique</th></tr></thead>
          <tbody>${rows.map(
            (
              r,
            ) => html`<tr><td>${when(r.time)}</td><td>${r.source}</td><td>${r.link_code}</td><td>${r.landing_path}</td>
            <td>${subIds(r.values as Record<string, string> | undefined)}</td><td>${r.suspect ? 'suspect' : r.unique ? 'yes' : 'repeat'}</td></tr>`,
          )}</tbody>`
          : html`<thead><tr><th scope="col">Time (UTC)</th><th scope="col">Kind</th><th scope="col">Customer</th><th scope="col">Value</th><th scope="col">Reference</th><th scope="col">Link</th></tr></thead>
          <tbody>${rows.map(
            (r) => html`<tr><td>${when(r.event_time)}</td><td>${r.kind}</td><td>${r.customer_id}</td>
              <td>${r.value === null ? '–' : `${r.value} ${r.currency}`}</td><td>${r.reference_id}</td><td>${r.link_code}</td></tr>`,
          )}</tbody>`
      }
    </table>
    <p class="count" data-testid="row-count">${rows.length} row${rows.length === 1 ? '' : 's'}${next ? ' so far' : ''}</p>
    ${next && html`<button type="button" onClick=${more} disabled=${loading}>Load more</button>`}
    ${loading && html`<p aria-busy="true">Loading…</p>`}
  </section>`
}
