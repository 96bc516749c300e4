import { RANGES } from '../api'
import { html } from '../html'

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10)

/**
 * The period of the cabinet's pages as a query (`range=30d`, `range=custom&from=…&to=…`), from the
 * page's URL: a custom period without dates is the last 30 days.
 */
export function periodQuery(params: URLSearchParams) {
  const range = params.get('range') ?? '30d'
  if (range !== 'custom') return `range=${encodeURIComponent(range)}`
  const to = params.get('to') ?? day(Date.now())
  const from = params.get('from') ?? day(Date.parse(`${to}T00:00:00Z`) - 29 * 86_400_000)
  return `range=custom&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`
}

/** The period picker: a named range, or two dates (both included) for a custom one. */
export function RangePicker({ value, onChange }: { value: string; onChange: (q: string) => void }) {
  const q = new URLSearchParams(value)
  const range = q.get('range') ?? '30d'
  const set = (changes: Record<string, string>) => {
    const next = new URLSearchParams({
      range,
      ...(range === 'custom' ? { from: q.get('from') ?? '', to: q.get('to') ?? '' } : {}),
      ...changes,
    })
    if (next.get('range') !== 'custom') {
      next.delete('from')
      next.delete('to')
    }
    onChange(periodQuery(next))
  }
  return html`<span class="range"><label>Period
    <select value=${range} onChange=${(e: Event) => set({ range: (e.target as HTMLSelectElement).value })} data-testid="range">
      ${RANGES.map((r) => html`<option value=${r.value}>${r.label}</option>`)}
    </select></label>
    ${
      range === 'custom' &&
      html`<label>From <input type="date" value=${q.get('from') ?? ''} data-testid="from"
          onChange=${(e: Event) => set({ from: (e.target as HTMLInputElement).value })} /></label>
        <label>To <input type="date" value=${q.get('to') ?? ''} data-testid="to"
          onChange=${(e: Event) => set({ to: (e.target as HTMLInputElement).value })} /></label>`
    }
  </span>`
}
