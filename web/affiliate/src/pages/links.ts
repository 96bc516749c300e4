import { useEffect, useState } from 'preact/hooks'
import { api } from '../api'
import { html } from '../html'

interface Link {
  id: number
  code: string
  landing_path: string
  campaign: string
  active: boolean
  url: string
}

async function copy(text: string) {
  try {
    await navigator.clipboard.writeText(text)
    return true
  } catch {
    // no clipboard permission (plain http, an old browser): select a hidden field and copy it
    const field = document.createElement('textarea')
    field.value = text
    field.setAttribute('readonly', '')
    field.className = 'offscreen'
    document.body.append(field)
    field.select()
    const ok = document.execCommand('copy')
    field.remove()
    return ok
  }
}

export function LinksPage() {
  const [rows, setRows] = useState<Link[] | null>(null)
  const [copied, setCopied] = useState<number | null>(null)
  const [error, setError] = useState('')
  useEffect(() => {
    api<{ rows: Link[] }>('/api/affiliate/links').then(
      (r) => setRows(r.rows),
      (e) => setError(e.message),
    )
  }, [])
  return html`<section>
    <header class="bar"><h1>Tracking links</h1></header>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${
      !rows
        ? html`<p aria-busy="true">Loading…</p>`
        : html`<table>
      <thead><tr><th scope="col">Link</th><th scope="col">Landing page</th><th scope="col">Campaign</th><th scope="col">Status</th><th scope="col"><span class="offscreen">Copy</span></th></tr></thead>
      <tbody>${rows.map(
        (l) => html`<tr>
          <td><code data-testid="link-url">${l.url}</code></td>
          <td>${l.landing_path}</td>
          <td>${l.campaign}</td>
          <td>${l.active ? 'active' : 'inactive'}</td>
          <td><button type="button" onClick=${async () => (await copy(l.url)) && setCopied(l.id)} aria-label=${`Copy ${l.code}`}>
            ${copied === l.id ? 'Copied' : 'Copy'}
          </button></td>
        </tr>`,
      )}</tbody>
    </table>`
    }
    <p class="status" role="status">${copied ? 'Link copied to the clipboard' : ''}</p>
  </section>`
}
