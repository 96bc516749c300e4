import { RANGES } from '../api'
import { html } from '../html'

export function RangePicker({ value, onChange }: { value: string; onChange: (r: string) => void }) {
  return html`<label class="range">Period
    <select value=${value} onChange=${(e: Event) => onChange((e.target as HTMLSelectElement).value)} data-testid="range">
      ${RANGES.map((r) => html`<option value=${r.value}>${r.label}</option>`)}
    </select>
  </label>`
}
