import { useEffect, useState } from 'preact/hooks'
import { api, type Money, money, type Report } from '../api'
import { html } from '../html'
import { RangePicker } from './range'

const DIMENSIONS = [
  ['day', 'Day'],
  ['link', 'Link'],
  ['sub1', 'Sub-id 1'],
  ['sub2', 'Sub-id 2'],
  ['sub3', 'Sub-id 3'],
  ['sub4', 'Sub-id 4'],
  ['sub5', 'Sub-id 5'],
  ['country', 'Country'],
  ['landing', 'Landing page'],
] as const

const amounts = (list: Money[]) => (list.length ? list.map(money).join(', ') : '–')

/** The report by a dimension for the period, its totals, and the table as CSV. */
export function ReportsPage({
  dimension,
  range,
  onFilter,
}: {
  dimension: string
  range: string
  onFilter: (d: string, r: string) => void
}) {
  const [r, setR] = useState<Report | null>(null)
  const [error, setError] = useState('')
  const query = `dimension=${dimension}&${range}`
  useEffect(() => {
    setR(null)
    setError('')
    api<Report>(`/api/affiliate/reports?${query}`).then(setR, (e) => setError(e.message))
  }, [query])
  const label = DIMENSIONS.find(([v]) => v === dimension)?.[1] ?? dimension
  return html`<section>
    <header class="bar">
      <h1>Reports</h1>
      <label>By <select value=${dimension} data-testid="dimension" onChange=${(e: Event) => onFilter((e.target as HTMLSelectElement).value, range)}>
        ${DIMENSIONS.map(([v, l]) => html`<option value=${v}>${l}</option>`)}
      </select></label>
      <${RangePicker} value=${range} onChange=${(x: string) => onFilter(dimension, x)} />
      <a class="csv" href=${`/api/affiliate/reports?${query}&format=csv`} download data-testid="csv">Download CSV</a>
    </header>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${
      !r
        ? !error && html`<p aria-busy="true">Loading…</p>`
        : html`<table data-testid="report">
      <thead><tr><th scope="col">${label}</th><th scope="col">Clicks</th><th scope="col">Unique clicks</th><th scope="col">Registrations</th>
        <th scope="col">First deposits</th><th scope="col">Deposit volume</th><th scope="col">Commissions</th></tr></thead>
      <tbody>${r.rows.map(
        (x) => html`<tr>
          <th scope="row">${x.key || html`<span class="muted">(none)</span>`}</th><td>${x.clicks}</td><td>${x.unique_clicks}</td>
          <td>${x.registrations}</td><td>${x.first_deposits}</td><td>${amounts(x.deposit_volume)}</td><td>${amounts(x.commissions)}</td>
        </tr>`,
      )}</tbody>
      <tfoot><tr data-testid="report-total"><th scope="row">Total</th><td>${r.totals.clicks}</td><td>${r.totals.unique_clicks}</td>
        <td>${r.totals.registrations}</td><td>${r.totals.first_deposits}</td><td>${amounts(r.totals.deposit_volume)}</td><td>${amounts(r.totals.commissions)}</td></tr></tfoot>
    </table>`
    }
  </section>`
}
