import { useEffect, useRef, useState } from 'preact/hooks'
import uPlot from 'uplot'
import { api, type Dashboard } from '../api'
import { html } from '../html'
import { RangePicker } from './range'

const STEPS: { key: keyof Dashboard['funnel']; label: string; kind: string }[] = [
  { key: 'clicks', label: 'Clicks', kind: 'clicks' },
  { key: 'registrations', label: 'Registrations', kind: 'registration' },
  { key: 'kyc_approvals', label: 'KYC approvals', kind: 'kyc_approval' },
  { key: 'first_deposits', label: 'First deposits', kind: 'first_deposit' },
  { key: 'active_traders', label: 'Active traders', kind: 'active_trader' },
  { key: 'deposits', label: 'Deposits', kind: 'deposit' },
]

const pct = (r: number) => `${(r * 100).toFixed(1)} %`
const compact = (v: number) =>
  Math.abs(v) >= 1e6
    ? `${+(v / 1e6).toFixed(1)}M`
    : Math.abs(v) >= 1e3
      ? `${+(v / 1e3).toFixed(1)}k`
      : String(v)

/** A uPlot chart of the daily series (clicks, registrations, first deposits). */
function Chart({ d }: { d: Dashboard }) {
  const box = useRef<HTMLDivElement>(null)
  useEffect(() => {
    if (!box.current) return
    const xs = d.series.days.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000)
    const width = Math.max(280, box.current.clientWidth)
    const plot = new uPlot(
      {
        width,
        height: 240,
        scales: { x: { time: true } },
        series: [
          {},
          { label: 'Clicks', stroke: '#0b5cff', width: 2 },
          { label: 'Registrations', stroke: '#1a7f37', width: 2 },
          { label: 'First deposits', stroke: '#bf3989', width: 2 },
        ],
        // room for the widest label, and 1.2k rather than a cut 1,200
        axes: [{}, { size: 56, values: (_u: uPlot, vals: number[]) => vals.map(compact) }],
      },
      [xs, d.series.clicks, d.series.registration, d.series.first_deposit],
      box.current,
    )
    const resize = () =>
      plot.setSize({ width: Math.max(280, box.current?.clientWidth ?? width), height: 240 })
    addEventListener('resize', resize)
    return () => {
      removeEventListener('resize', resize)
      plot.destroy()
    }
  }, [d])
  return html`<figure class="chart"><div ref=${box} data-testid="chart"></div><figcaption>Per day, ${d.from} to ${d.to}</figcaption></figure>`
}

export function DashboardPage({ range, onRange }: { range: string; onRange: (r: string) => void }) {
  const [d, setD] = useState<Dashboard | null>(null)
  const [error, setError] = useState('')
  useEffect(() => {
    setD(null)
    api<Dashboard>(`/api/affiliate/dashboard?${range}`).then(setD, (e) => setError(e.message))
  }, [range])
  return html`<section>
    <header class="bar"><h1>Dashboard</h1><${RangePicker} value=${range} onChange=${onRange} /></header>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${
      error
        ? null
        : !d
          ? html`<p aria-busy="true">Loading…</p>`
          : html`
      <ol class="funnel" aria-label="Funnel">
        ${STEPS.map(
          (s) => html`<li>
            <a href=${`/conversions?kind=${s.kind}&${range}`} data-testid=${`funnel-${s.key}`}>
              <span class="n">${d.funnel[s.key]}</span><span class="label">${s.label}</span>
            </a>
          </li>`,
        )}
      </ol>
      <dl class="rates">
        <div><dt>Unique clicks</dt><dd data-testid="unique-clicks">${d.funnel.unique_clicks}</dd></div>
        <div><dt>Unique click → registration</dt><dd>${pct(d.rates.registration)}</dd></div>
        <div><dt>Registration → KYC</dt><dd>${pct(d.rates.kyc_approval)}</dd></div>
        <div><dt>Registration → first deposit</dt><dd>${pct(d.rates.first_deposit)}</dd></div>
        <div><dt>Registration → active trader</dt><dd>${pct(d.rates.active_trader)}</dd></div>
      </dl>
      <table class="volume"><caption>Deposit volume</caption>
        <thead><tr><th scope="col">Currency</th><th scope="col">Deposits</th><th scope="col">Refunds and chargebacks</th><th scope="col">Net</th></tr></thead>
        <tbody>${
          d.deposit_volume.length === 0
            ? html`<tr><td colspan="4">No deposits in this period</td></tr>`
            : d.deposit_volume.map(
                (v) =>
                  html`<tr><td>${v.currency}</td><td data-testid=${`volume-${v.currency}`}>${v.deposits.toFixed(2)}</td><td>${v.reversals.toFixed(2)}</td><td>${v.net.toFixed(2)}</td></tr>`,
              )
        }</tbody>
      </table>
      <${Chart} d=${d} />`
    }
  </section>`
}
