import { join } from 'node:path'
import { getAbsoluteFSPath } from 'swagger-ui-dist'

const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  png: 'image/png',
}

/** Serves bundled static assets (Swagger UI) from node_modules, so the docs page works offline. */
export async function loadAssetFromDisk(name: string): Promise<Response | null> {
  const file = Bun.file(join(getAbsoluteFSPath(), name))
  if (!(await file.exists())) return null
  const ext = name.split('.').pop() ?? ''
  return new Response(file, {
    headers: {
      'content-type': TYPES[ext] ?? 'application/octet-stream',
      'cache-control': 'public, max-age=86400',
    },
  })
}
