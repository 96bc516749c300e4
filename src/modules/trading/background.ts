import type { AppContext } from '../../context'
import { QuoteSimulator } from '../market/simulator-source'

/**
 * Background loops of a server instance: the trigger engine's book (loaded, then kept in step with
 * other instances), price alerts (loaded, expired on time), the daily swap rollover and, when configured, the quote simulator.
 */
export async function startTradingLoops(ctx: AppContext) {
  await ctx.quotes.loadSaved()
  await ctx.engine.resync()
  await ctx.alerts.load()
  const timers: ReturnType<typeof setInterval>[] = []
  const safely = (name: string, fn: () => Promise<unknown>) => async () => {
    try {
      await fn()
    } catch (e) {
      ctx.logger.log('error', `${name} failed`, { err: e instanceof Error ? e.message : String(e) })
    }
  }
  timers.push(
    setInterval(
      safely('order resync', () => ctx.engine.resync()),
      2000,
    ),
  )
  timers.push(
    setInterval(
      safely('alerts', async () => {
        await ctx.alerts.load()
        await ctx.alerts.expireDue()
      }),
      2000,
    ),
  )
  timers.push(
    setInterval(
      safely('swap rollover', () => ctx.engine.rollover()),
      60_000,
    ),
  )
  timers.push(
    setInterval(
      safely('quote snapshot', () => ctx.quotes.saveLatest()),
      5000,
    ),
  )
  let simulator: QuoteSimulator | null = null
  if (ctx.config.quotes.simulator) {
    simulator = new QuoteSimulator(
      ctx.quotes,
      ctx.refdata,
      ctx.clock,
      ctx.logger,
      ctx.config.quotes.seed,
      async (s) => (await ctx.candles.last(s, 'M1', 1))[0]?.close ?? null,
    )
    simulator.start(ctx.config.quotes.tickMs)
  }
  return {
    simulator,
    async stop() {
      for (const t of timers) clearInterval(t)
      simulator?.stop()
      await ctx.candles.flush()
      await ctx.quotes.saveLatest()
    },
  }
}
