import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import { isBusId } from '../../kernel/bus/bus'
import { invalid } from '../../kernel/http/errors'
import type { MarketCtx } from './context'
import type { Tick } from './quotes'
import { pricedForGroup } from './reference'

const enc = new TextEncoder()
/** How often a stream at the edge asks the shared bus for new ticks (one REST call each, when idle). */
const EDGE_POLL_MS = 500
/**
 * How long one stream lasts. The client's EventSource then reconnects with its Last-Event-ID (`retry:
 * 2000`), missing nothing, and the reconnect is authorized again: a session signed out, or a symbol hidden
 * from the group, stops within this time. At the edge it is also the bound of the bus polls, subrequests
 * of one request that Cloudflare limits (1,000 on the paid plan: about 8 minutes at two polls a second).
 */
const STREAM_MS = 240_000
/** A replay longer than this sends the latest quote of each symbol instead of every tick missed. */
const MAX_REPLAY = 500

/** The last tick of each symbol, in the order of the list. */
function latestOfEach(ticks: Tick[]) {
  const last = new Map(ticks.map((t, i) => [t.symbol, i]))
  return ticks.filter((t, i) => last.get(t.symbol) === i)
}

/**
 * Server-Sent Events of quotes for chosen symbols. A user session gets its group's prices (spread
 * settings applied, hidden symbols refused); staff get source prices. Each event's id is the bus id
 * of its tick (global: any instance resumes it); a reconnect with Last-Event-ID replays the ticks missed (or, when they are no longer buffered,
 * the latest quote of each symbol). A comment line every 15 s keeps proxies from closing the stream. At
 * the edge a stream reads the bus itself, twice a second (quotes reach it up to half a second later).
 */
export async function quoteStream(
  ctx: MarketCtx,
  brand: Brand,
  session: Session,
  symbolsParam: string,
  lastEventId: string | null,
  signal: AbortSignal,
) {
  const wanted = [
    ...new Set(
      symbolsParam
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ]
  if (wanted.length === 0 || wanted.length > 100) throw invalid('symbols: 1 to 100 comma-separated symbols')
  await ctx.refdata.fresh()
  let groupId: number | null = null
  if (session.type === 'SESSION_USER') {
    const account = await ctx.accounts.read.account(session.login!)
    groupId = account && account.brandId === brand.id ? account.groupId : null
    if (groupId === null) throw invalid('session: account not found')
  }
  for (const s of wanted) {
    const gs = groupId === null ? ctx.refdata.symbol(s) : await ctx.refdata.forGroup(groupId, s)
    if (!gs || ('sec' in gs && gs.sec.show !== 1)) throw invalid(`symbols: ${s} is not available`)
  }
  const set = new Set(wanted)
  const price = async (t: { symbol: string; bid: number; ask: number; time: number }) => {
    if (groupId === null) return { bid: t.bid, ask: t.ask }
    const gs = await ctx.refdata.forGroup(groupId, t.symbol)
    if (!gs) return null
    return pricedForGroup(t, gs)
  }
  const event = async (t: Tick) => {
    const p = await price(t)
    if (!p) return ''
    return `id: ${t.id}\nevent: quote\ndata: ${JSON.stringify({ symbol: t.symbol, bid: p.bid, ask: p.ask, time: t.time })}\n\n`
  }
  // what the stream starts with is read before the answer: a dependency away (the bus, the cache) is a
  // 503 in the error shape, not a stream that fails after its 200 went out
  const first = ['retry: 2000\n\n']
  const last = lastEventId !== null && isBusId(lastEventId) ? lastEventId : null
  const replay = last === null ? null : await ctx.quotes.since(last)
  if (replay) {
    const missed = replay.filter((t) => set.has(t.symbol))
    // a quote is superseded by the next: past a bound only the latest of each symbol is worth its bytes
    // (in bus order: the ids a client sees only move forward)
    const sent = missed.length > MAX_REPLAY ? latestOfEach(missed) : missed
    for (const t of sent) first.push(await event(t))
  }
  // where the stream stands on the bus: what an edge stream follows from
  let at = replay ? (replay.at(-1)?.id ?? last!) : ''
  if (!replay) {
    at = await ctx.quotes.newestId()
    for (const s of wanted) {
      const q = await ctx.quotes.get(s)
      if (q) first.push(await event({ symbol: s, ...q, id: at }))
    }
  }
  let unsubscribe = () => {}
  let keepAlive: ReturnType<typeof setInterval> | undefined
  let lifetime: ReturnType<typeof setTimeout> | undefined
  // the client went, the consumer cancelled, or this instance shuts down (the client reconnects elsewhere
  // with Last-Event-ID); it may come while the start still awaits: nothing is subscribed after it
  let ended = false
  let close = () => {}
  const end = () => {
    if (ended) return
    ended = true
    unsubscribe()
    clearInterval(keepAlive)
    clearTimeout(lifetime)
    close()
  }
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      close = () => {
        try {
          controller.close()
        } catch {}
      }
      const send = (text: string) => {
        if (text && !ended) controller.enqueue(enc.encode(text))
      }
      for (const text of first) send(text)
      // where the bus stands, for the id the stream leaves its client with (a quiet symbol's client would
      // otherwise resume from its last quote and be replayed everything since)
      let seen = at
      const listener = async (ticks: Tick[]) => {
        for (const t of ticks) {
          if (t.id) seen = t.id
          if (set.has(t.symbol)) send(await event(t))
        }
      }
      if (ended || signal.aborted) return end()
      unsubscribe = ctx.edge ? ctx.quotes.follow(at, listener, EDGE_POLL_MS) : ctx.quotes.onTicks(listener)
      keepAlive = setInterval(() => send(': keep-alive\n\n'), 15_000)
      lifetime = setTimeout(() => {
        // an id with no data moves the client's Last-Event-ID (EventSource) without an event
        if (seen && isBusId(seen)) send(`id: ${seen}\n\n`)
        end()
      }, STREAM_MS)
      signal.addEventListener('abort', end)
    },
    cancel: end,
  })
  return new Response(stream, {
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
    },
  })
}
