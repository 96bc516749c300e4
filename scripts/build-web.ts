// Builds the affiliate cabinet (web/affiliate/src) into web/affiliate/dist/bundle.js and bundle.css with
// Bun's bundler: Preact + htm for the views, uPlot for the chart, nothing fetched at run time.
import { rmSync } from 'node:fs'

const outdir = 'web/affiliate/dist'
rmSync(outdir, { recursive: true, force: true })
const result = await Bun.build({
  entrypoints: ['web/affiliate/src/bundle.ts'],
  outdir,
  target: 'browser',
  minify: true,
  sourcemap: 'none',
  naming: '[name].[ext]',
})
if (!result.success) {
  for (const log of result.logs) console.error(log)
  process.exit(1)
}
for (const o of result.outputs) console.log(`built ${o.path} (${o.size} bytes)`)
