import { Elysia, t } from 'elysia'

const app = new Elysia()
  .derive(({ set }) => {
    set.headers['x-request-id'] = crypto.randomUUID()
    return { startedAt: performance.now() }
  })
  .post(
    '/trade/open',
    async ({ body }) => (
      process.env.DEFER ? await new Promise((r) => setImmediate(r)) : 0,
      { order: 1, trade: { ...body, open_price: 65020 } }
    ),
    {
      body: t.Object({
        login: t.Integer(),
        cmd: t.Integer(),
        volume: t.Integer(),
        symbol: t.String(),
        sl: t.Number(),
        tp: t.Number(),
      }),
    },
  )
  .listen({ port: 0, hostname: '127.0.0.1' })
console.log(`READY http://127.0.0.1:${app.server!.port}`)
