import { useEffect, useState } from 'preact/hooks'
import { api, type Me, Unauthorized } from './api'
import { html } from './html'
import { CommissionsPage } from './pages/commissions'
import { ConversionsPage } from './pages/conversions'
import { DashboardPage } from './pages/dashboard'
import { LinksPage } from './pages/links'
import { Login } from './pages/login'
import { periodQuery } from './pages/range'
import { ReportsPage } from './pages/reports'
import { StatementPage, StatementsPage } from './pages/statements'
import { navigate, useLocation } from './router'

export function App() {
  const loc = useLocation()
  const [me, setMe] = useState<Me | null | undefined>(undefined)
  const params = new URLSearchParams(loc.search)
  // the period as a query (range, and from/to of a custom one): kept across pages
  const range = periodQuery(params)
  useEffect(() => {
    api<Me>('/api/affiliate/me').then(setMe, () => setMe(null))
  }, [])
  // a request that finds the session gone sends the partner to the sign-in page
  useEffect(() => {
    const on = (e: PromiseRejectionEvent) => {
      if (e.reason instanceof Unauthorized) {
        setMe(null)
        navigate('/login')
      }
    }
    addEventListener('unhandledrejection', on)
    return () => removeEventListener('unhandledrejection', on)
  }, [])
  if (me === undefined) return html`<p aria-busy="true">Loading…</p>`
  if (me === null || loc.path === '/login') {
    if (me) {
      navigate('/')
      return null
    }
    return html`<${Login} onIn=${(m: Me) => {
      setMe(m)
      navigate('/')
    }} />`
  }
  const logout = async () => {
    await api('/api/affiliate/logout', { method: 'POST', body: {} }).catch(() => {})
    setMe(null)
    navigate('/login')
  }
  const tab = (path: string, label: string) =>
    html`<a href=${path} aria-current=${loc.path === path ? 'page' : undefined}>${label}</a>`
  let page: unknown
  if (loc.path === '/links') page = html`<${LinksPage} />`
  else if (loc.path === '/conversions')
    // keyed: another kind or range is another list (its rows never render under the other's columns)
    page = html`<${ConversionsPage} key=${`${params.get('kind') ?? ''}:${range}`} kind=${params.get('kind') ?? ''} range=${range}
      onFilter=${(k: string, r: string) => navigate(`/conversions?${k ? `kind=${k}&` : ''}${r}`)} />`
  else if (loc.path === '/reports') {
    const dimension = params.get('dimension') ?? 'day'
    page = html`<${ReportsPage} dimension=${dimension} range=${range}
      onFilter=${(d: string, r: string) => navigate(`/reports?dimension=${d}&${r}`)} />`
  } else if (loc.path === '/commissions')
    page = html`<${CommissionsPage} key=${loc.search} kind=${params.get('kind') ?? ''} period=${params.get('period') ?? ''}
      range=${range} onFilter=${(q: string) => navigate(`/commissions?${q}`)} />`
  else if (loc.path === '/statements') page = html`<${StatementsPage} />`
  else if (loc.path.startsWith('/statements/'))
    page = html`<${StatementPage} id=${loc.path.slice('/statements/'.length)} />`
  else page = html`<${DashboardPage} range=${range} onRange=${(r: string) => navigate(`/?${r}`)} />`
  return html`<div class="shell">
    <nav aria-label="Cabinet">
      <span class="brand">${me.brand.name} partners</span>
      ${tab('/', 'Dashboard')} ${tab('/links', 'Links')} ${tab('/conversions', 'Conversions')}
      ${tab('/reports', 'Reports')} ${tab('/statements', 'Statements')}
      <span class="who" data-testid="who">${me.name || me.email} · ${me.code}</span>
      <button type="button" onClick=${logout}>Sign out</button>
    </nav>
    <main>${page}</main>
  </div>`
}
