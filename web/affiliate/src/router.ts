import { useEffect, useState } from 'preact/hooks'

/** Client-side routes on the History API: links are real anchors, so they work with a keyboard. */
export function navigate(to: string) {
  if (to === location.pathname + location.search) return
  history.pushState(null, '', to)
  dispatchEvent(new PopStateEvent('popstate'))
}

export function useLocation() {
  const [loc, setLoc] = useState({ path: location.pathname, search: location.search })
  useEffect(() => {
    const on = () => setLoc({ path: location.pathname, search: location.search })
    addEventListener('popstate', on)
    return () => removeEventListener('popstate', on)
  }, [])
  return loc
}

/** Follows same-origin anchors inside the app without a page load (modifier keys keep the browser's way). */
export function interceptLinks(e: MouseEvent) {
  const a = (e.target as Element).closest('a')
  if (
    !a ||
    a.target ||
    a.origin !== location.origin ||
    e.ctrlKey ||
    e.metaKey ||
    e.shiftKey ||
    e.button !== 0
  )
    return
  if (a.hasAttribute('download') || a.getAttribute('rel') === 'external') return
  e.preventDefault()
  navigate(a.pathname + a.search)
}
