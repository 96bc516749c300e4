// Ticks per second with 100,000 resting triggers (pending, SL, TP) over 30 symbols: the engine's sorted
// books against a full scan of every order on every tick, in one run. Goal (issue 3): >= 20,000 ticks/s
// and >= 50x the full scan. Due triggers are removed as the engine does after firing them.
import { rng } from '../src/modules/market/domain/simulator'
import { scanDue, TriggerBook, type TriggerSource } from '../src/modules/trading/domain/triggers'

const SYMBOLS = 30
const ORDERS = Number(process.env.BENCH_ORDERS ?? 100_000)
const r = rng(42)
const price = Array.from({ length: SYMBOLS }, (_, i) => 1 + i)
const orders: (TriggerSource & { symbol: string })[] = []
for (let i = 0; i < ORDERS; i++) {
  const s = i % SYMBOLS
  const p = price[s]
  const cmd = Math.floor(r() * 6)
  const away = (0.01 + r() * 0.2) * p
  const pending = cmd >= 2
  const below = cmd === 2 || cmd === 5
  orders.push({
    ticket: i + 1,
    symbol: `S${s}`,
    cmd,
    state: pending ? 'pending' : 'open',
    openPrice: pending ? (below ? p - away : p + away) : p,
    sl: pending ? 0 : cmd === 0 ? p - away : p + away,
    tp: pending ? 0 : cmd === 0 ? p + away : p - away,
  })
}
const triggers = orders.reduce((n, o) => n + (o.state === 'pending' ? 1 : 2), 0)

function ticks(n: number) {
  const walk = [...price]
  const out: { symbol: string; bid: number; ask: number }[] = []
  for (let i = 0; i < n; i++) {
    const s = i % SYMBOLS
    walk[s] *= 1 + (r() - 0.5) * 0.002
    out.push({ symbol: `S${s}`, bid: walk[s], ask: walk[s] * 1.0001 })
  }
  return out
}

const book = new TriggerBook()
for (const o of orders) book.upsert(o.symbol, o)
const bookTicks = ticks(200_000)
let fired = 0
let t0 = performance.now()
for (const t of bookTicks) {
  const due = book.due(t.symbol, t.bid, t.ask)
  for (const d of due) {
    book.remove(d.ticket)
    fired++
  }
}
const bookRate = bookTicks.length / ((performance.now() - t0) / 1000)

const live = new Map(orders.map((o) => [o.ticket, o]))
const scanTicks = ticks(300)
t0 = performance.now()
for (const t of scanTicks) {
  // the baseline walks every order of every symbol on each tick
  for (const d of scanDue([...live.values()], t.symbol, t.bid, t.ask)) live.delete(d.ticket)
}
const scanRate = scanTicks.length / ((performance.now() - t0) / 1000)

console.log(`resting triggers            ${triggers} (${ORDERS} orders, ${SYMBOLS} symbols)`)
console.log(`sorted books                ${bookRate.toFixed(0).padStart(10)} ticks/s  (${fired} fired)`)
console.log(`full scan baseline          ${scanRate.toFixed(0).padStart(10)} ticks/s`)
console.log(
  `ratio                       ${(bookRate / scanRate).toFixed(1)}x   (goals: >= 20000 ticks/s, >= 50x)`,
)
