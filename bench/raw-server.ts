// Baseline: raw Bun.serve returning a small JSON. Prints READY <url>.
const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => Response.json({ ok: true, n: 1 }) })
console.log(`READY http://127.0.0.1:${server.port}`)
