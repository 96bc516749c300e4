import { useEffect, useRef, useState } from 'preact/hooks'
import uPlot from 'uplot'
import { api, type Dashboard, type Earnings, money } from '../api'
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

const KIND_LABEL: Record<string, string> = {
  cpa: 'CPA',
  cpa_reversal: 'CPA reversals',
  revshare: 'RevShare',
  revshare_reversal: 'RevShare reversals',
  tier_adjustment: 'Tier adjustments',
  sub_affiliate: 'Sub-affiliates',
}

/** Commissions of the period per kind and currency, and this month's running total: each opens its rows. */
function EarningsBlock({ range }: { range: string }) {
  const [e, setE] = useState<Earnings | null>(null)
  const [error, setError] = useState('')
  useEffect(() => {
    setE(null)
    api<Earnings>(`/api/affiliate/earnings?${range}`).then(setE, (x) => setError(x.message))
  }, [range])
  if (error) return html`<p class="error" role="alert">${error}</p>`
  if (!e) return html`<p aria-busy="true">Loading…</p>`
  const cur = e.current_period
  return html`<section class="earnings" aria-label="Earnings" data-testid="earnings">
    <h2>Earnings</h2>
    <ol class="funnel">
      ${
        e.totals.length === 0
          ? html`<li><a href=${`/commissions?${range}`} data-testid="earnings-total-none"><span class="n">0</span><span class="label">Commissions in this period</span></a></li>`
          : e.totals.map(
              (
                t,
              ) => html`<li><a href=${`/commissions?${range}`} data-testid=${`earnings-total-${t.currency}`}>
                <span class="n">${money(t)}</span><span class="label">Commissions (${t.rows} rows)</span></a></li>`,
            )
      }
      <li><a href=${`/commissions?period=${cur.period}`} data-testid="earnings-current">
        <span class="n">${cur.totals.length ? cur.totals.map(money).join(', ') : '0'}</span>
        <span class="label">${cur.period} so far (${cur.status})</span></a></li>
    </ol>
    <table class="volume"><caption>Commissions by kind</caption>
      <thead><tr><th scope="col">Kind</th><th scope="col">Amount</th><th scope="col">Rows</th></tr></thead>
      <tbody>${
        e.by_kind.length === 0
          ? html`<tr><td colspan="3">No commissions in this period</td></tr>`
          : e.by_kind.map(
              (
                k,
              ) => html`<tr><td><a href=${`/commissions?kind=${k.kind}&${range}`} data-testid=${`earnings-${k.kind}-${k.currency}`}>${KIND_LABEL[k.kind] ?? k.kind}</a></td>
                <td>${money(k)}</td><td>${k.rows}</td></tr>`,
            )
      }</tbody>
    </table>
  </section>`
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
      <${EarningsBlock} range=${range} />
      <${Chart} d=${d} />`
    }
  </section>`
}
