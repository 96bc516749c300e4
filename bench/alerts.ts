// Ticks per second evaluated with 100,000 active price alerts over 30 symbols (every condition, both
// sides, once and repeat): the level books of the alert engine against evaluating every alert on every
// tick, in one run. Goal (issue 4): >= 20,000 ticks/s and >= 50x the scan. Firings are counted, not
// written (the database write of a firing is not part of the evaluation).
import { LevelBook } from '../src/modules/alerts/domain/book'
import { type AlertSpec, initialState, step } from '../src/modules/alerts/domain/conditions'
import { rewatch, type Tracked, wake } from '../src/modules/alerts/domain/evaluate'
import { rng } from '../src/modules/market/domain/simulator'

const SYMBOLS = 30
const ALERTS = Number(process.env.BENCH_ALERTS ?? 100_000)
const r = rng(7)
const price = Array.from({ length: SYMBOLS }, (_, i) => 1 + i)

interface Alert extends Tracked {
  id: number
  symbol: number
  side: number
  once: boolean
}

function makeAlerts(): Alert[] {
  const out: Alert[] = []
  for (let i = 0; i < ALERTS; i++) {
    const s = i % SYMBOLS
    const p = price[s]
    const condition = Math.floor(r() * 11)
    const away = (r() - 0.5) * 0.4 * p
    const lo = p + away
    const spec: AlertSpec = {
      condition,
      targetPrice: p + away,
      channelLow: Math.min(lo, lo + 0.05 * p),
      channelHigh: Math.max(lo, lo + 0.05 * p),
      moveThreshold: condition >= 9 ? 0.01 * p + r() * 0.1 * p : 1 + r() * 10,
      referencePrice: p,
    }
    out.push({ id: i + 1, symbol: s, side: i % 2, once: r() < 0.5, spec, state: initialState(spec, p) })
  }
  return out
}

function ticks(n: number) {
  const walk = [...price]
  const out: { symbol: number; bid: number; ask: number }[] = []
  for (let i = 0; i < n; i++) {
    const s = i % SYMBOLS
    walk[s] *= 1 + (r() - 0.5) * 0.002
    out.push({ symbol: s, bid: walk[s], ask: walk[s] * 1.0001 })
  }
  return out
}

// level books, as the engine uses them
const alerts = makeAlerts()
const byId = new Map(alerts.map((a) => [a.id, a]))
const books = Array.from({ length: SYMBOLS * 2 }, () => new LevelBook())
for (const a of alerts) {
  const p = a.side === 1 ? price[a.symbol] * 1.0001 : price[a.symbol]
  rewatch(books[a.symbol * 2 + a.side], a.id, a, p)
}
const bookTicks = ticks(200_000)
let fired = 0
let t0 = performance.now()
for (const t of bookTicks)
  for (const side of [0, 1]) {
    const book = books[t.symbol * 2 + side]
    const p = side === 1 ? t.ask : t.bid
    for (const w of wake(book, p, (id) => byId.get(id))) {
      const a = byId.get(w.id)!
      if (w.fired) {
        fired++
        if (a.once) {
          byId.delete(w.id)
          continue
        }
      }
      rewatch(book, w.id, a, p)
    }
  }
const bookRate = bookTicks.length / ((performance.now() - t0) / 1000)

// baseline: every active alert is evaluated on every tick
const scanAlerts = makeAlerts()
const active = new Set(scanAlerts)
const scanTicks = ticks(300)
let scanFired = 0
t0 = performance.now()
for (const t of scanTicks)
  for (const a of active) {
    if (a.symbol !== t.symbol) continue
    const res = step(a.spec, a.state, a.side === 1 ? t.ask : t.bid)
    a.state = res.next
    if (res.fired) {
      scanFired++
      if (a.once) active.delete(a)
    }
  }
const scanRate = scanTicks.length / ((performance.now() - t0) / 1000)

console.log(`active alerts               ${ALERTS} (${SYMBOLS} symbols, bid and ask, 11 conditions)`)
console.log(`level books                 ${bookRate.toFixed(0).padStart(10)} ticks/s  (${fired} firings)`)
console.log(`scan every alert            ${scanRate.toFixed(0).padStart(10)} ticks/s  (${scanFired} firings)`)
console.log(
  `ratio                       ${(bookRate / scanRate).toFixed(1)}x   (goals: >= 20000 ticks/s, >= 50x)`,
)
