import type { Brand } from '../../../kernel/brand/registry'
import type { Kernel } from '../../../kernel/kernel'
import { refuse } from '../errors'

/** Nothing from outside the host: scripts, styles, images and requests from this origin only. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

const HEADERS = {
  'content-security-policy': CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)

/** The page every cabinet route serves; the app (web/affiliate) renders the route in the browser. */
export function cabinetShell(brand: Brand) {
  const body = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(brand.name)} partners</title>
<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/bundle.css">
<script type="module" src="/bundle.js"></script>
</head>
<body><div id="app"></div><noscript>The partner cabinet needs JavaScript.</noscript></body>
</html>`
  return new Response(body, {
    headers: { ...HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' },
  })
}

/** A built bundle or asset of the cabinet, with its cache header and the same policy. */
export async function serveAsset(ctx: Pick<Kernel, 'loadAsset'>, name: string) {
  const res = await ctx.loadAsset(name)
  if (!res) throw refuse('NOT_FOUND', 'not found')
  const headers = new Headers(res.headers)
  for (const [k, v] of Object.entries(HEADERS)) headers.set(k, v)
  return new Response(res.body, { status: 200, headers })
}
