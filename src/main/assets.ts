import { join } from 'node:path'
import { getAbsoluteFSPath } from 'swagger-ui-dist'
import { assetCacheControl } from './asset-cache'

const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  png: 'image/png',
  html: 'text/html; charset=utf-8',
  svg: 'image/svg+xml',
}

/** The affiliate cabinet's bundle (built into web/affiliate/dist) and its static assets. */
const CABINET = /^cabinet\/(bundle\.(js|css)|assets\/[a-z0-9-]{1,64}\.(svg|png))$/

/** A brand's static pages (attribution's landing pages): `site/<brand>/<page>.html` under the project. */
const SITE_PAGE = /^site\/[a-z0-9-]{1,64}\/[a-z0-9-]{1,64}\.html$/
const SITE_ROOT = join(import.meta.dir, '..', '..')

/** Serves bundled static assets (Swagger UI) from node_modules, so the docs page works offline. */
export async function loadAssetFromDisk(name: string): Promise<Response | null> {
  const site = SITE_PAGE.test(name)
  const cabinet = CABINET.exec(name)
  if ((name.startsWith('site/') && !site) || (name.startsWith('cabinet/') && !cabinet)) return null
  const path = cabinet
    ? join(SITE_ROOT, 'web/affiliate', cabinet[2] ? `dist/${cabinet[1]}` : cabinet[1])
    : site
      ? join(SITE_ROOT, name)
      : join(getAbsoluteFSPath(), name)
  const file = Bun.file(path)
  if (!(await file.exists())) return null
  const ext = name.split('.').pop() ?? ''
  return new Response(file, {
    headers: {
      'content-type': TYPES[ext] ?? 'application/octet-stream',
      'cache-control': assetCacheControl(name),
    },
  })
}
