// Swagger UI's assets in the Workers bundle (wrangler.toml [[rules]]: text and bytes), so the page works
// at the edge as it does on the Bun server, with nothing fetched from a CDN.
import favicon from 'swagger-ui-dist/favicon-32x32.png'
import css from 'swagger-ui-dist/swagger-ui.css'
import bundle from 'swagger-ui-dist/swagger-ui-bundle.js'
import betaIndex from '../../site/beta/index.html'
import defaultIndex from '../../site/default/index.html'
import defaultPromo from '../../site/default/promo.html'
import cabinetFavicon from '../../web/affiliate/assets/favicon.svg'
import cabinetCss from '../../web/affiliate/dist/bundle.css'
import cabinetJs from '../../web/affiliate/dist/bundle.js'
import { assetCacheControl } from './asset-cache'

const ASSETS: Record<string, { body: string | ArrayBuffer; type: string }> = {
  'swagger-ui-bundle.js': { body: bundle, type: 'text/javascript; charset=utf-8' },
  'swagger-ui.css': { body: css, type: 'text/css; charset=utf-8' },
  'favicon-32x32.png': { body: favicon, type: 'image/png' },
  // the brands' landing pages (site/): a page added there is one more line here
  'site/default/index.html': { body: defaultIndex as unknown as string, type: 'text/html; charset=utf-8' },
  'site/default/promo.html': { body: defaultPromo as unknown as string, type: 'text/html; charset=utf-8' },
  'site/beta/index.html': { body: betaIndex as unknown as string, type: 'text/html; charset=utf-8' },
  // the affiliate cabinet, built before wrangler bundles this (scripts/build-web.ts)
  'cabinet/bundle.js': { body: cabinetJs as unknown as string, type: 'text/javascript; charset=utf-8' },
  'cabinet/bundle.css': { body: cabinetCss as unknown as string, type: 'text/css; charset=utf-8' },
  'cabinet/assets/favicon.svg': { body: cabinetFavicon as unknown as string, type: 'image/svg+xml' },
}

export async function loadBundledAsset(name: string): Promise<Response | null> {
  const a = ASSETS[name]
  if (!a) return null
  return new Response(a.body, {
    headers: { 'content-type': a.type, 'cache-control': assetCacheControl(name) },
  })
}
