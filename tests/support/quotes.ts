import { expect } from 'bun:test'
import type { ManualClock } from '../../src/kernel/clock'
import type { TestApp } from './app'

export type Tick = { symbol: string; bid: number; ask: number }

/**
 * Posts quotes as the dealer one second after the previous batch (a tick older than the symbol's last is
 * dropped), so triggers, stop-outs and notifications run as they would on a live feed.
 */
export const quoteIngest =
  (app: () => TestApp, clock: ManualClock, dealer: () => string) => async (ticks: Tick[]) => {
    clock.advance(1000)
    const r = await app().request('POST', '/market/quotes', { token: dealer(), body: { ticks } })
    expect(r.status).toBe(200)
    return r.json
  }
