import { extractToken } from '../../kernel/auth/extract'
import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import { compareIds, isBusId } from '../../kernel/bus/bus'
import { ApiError, invalid } from '../../kernel/http/errors'
import { PrincipalsPort } from '../../kernel/kernel'
import type { AccountRecord } from '../accounts'
import type { MarketCtx } from './context'
import type { Tick } from './quotes'
import { pricedForGroup } from './reference'

const enc = new TextEncoder()
/** How often a stream at the edge asks the shared bus for new ticks (one REST call each, when idle). */
const EDGE_POLL_MS = 500
/**
 * How long one stream lasts. The client's EventSource then reconnects with its Last-Event-ID (`retry:
 * 2000`), missing nothing, and the reconnect is authorized again: a symbol hidden from the group stops
 * within this time.
 */
const STREAM_MS = 240_000
/**
 * At the edge it also bounds the subrequests of one request, which Cloudflare limits (1,000 on the paid
 * plan). Measured over a whole stream: its start a few (the shared quotes with the id they are as of in
 * one read, the bus's newest), a bus poll one call (240 in 2 minutes), a session check two reads (40
 * checks: the token, its principal: an account's record holds its group), and the reference data's version
 * about one a second while it ticks (120): ~450.
 */
const EDGE_STREAM_MS = 120_000
/** How often an open stream checks that its session still holds (signed out, password changed, disabled). */
const SESSION_CHECK_MS = 3_000
/** A replay longer than this sends the latest quote of each symbol instead of every tick missed. */
const MAX_REPLAY = 500
/**
 * Bytes a stream queues for a reader that does not keep up (the socket's own buffers come on top). Past
 * it a symbol's ticks replace each other until the reader has taken what is queued: its memory is bounded.
 */
const QUEUE_BYTES = 64 * 1024
/** Streams one principal (account, customer or staff member) may hold open at once, on all instances. */
export const MAX_STREAMS_PER_PRINCIPAL = 8

/**
 * A principal's (account's, customer's or staff member's) stream slots in the shared store, so the cap
 * holds across instances and edge isolates (counted per instance, one account could open 8 streams on
 * each: at the edge, an isolate per request, without bound, each polling the bus twice a second). A slot
 * is a lease for the stream's lifetime and a minute: a runtime that tore a stream down without its cancel
 * (a Worker's ended request) holds it no longer than that.
 */
const slotKeys = (s: Session) => {
  const who = `${s.brandId}:${s.type}:${s.type === 'SESSION_USER' ? s.login : (s.customerId ?? s.staffId)}`
  return Array.from({ length: MAX_STREAMS_PER_PRINCIPAL }, (_, i) => `stream-slot:v1:${who}:${i}`)
}

/** Takes a free slot of the principal's; the function that gives it back, or null when all are held. */
async function takeSlot(ctx: MarketCtx, session: Session) {
  const keys = slotKeys(session)
  const owner = crypto.randomUUID()
  const ttl = (ctx.edge ? EDGE_STREAM_MS : STREAM_MS) + 60_000
  const held = await ctx.store.getMany(keys)
  for (let i = 0; i < keys.length; i++) {
    if (held[i] !== null) continue
    const answer = await ctx.store.lease(keys[i]!, owner, ttl)
    if (answer.held) return () => ctx.store.unlease(keys[i]!, owner).catch(() => {})
    // the store is away: quotes without the cap rather than no quotes (the cap is a guard against abuse)
    if (answer.unreachable) return async () => {}
  }
  return null
}

/** The last tick of each symbol, in the order of the list. */
function latestOfEach(ticks: Tick[]) {
  const last = new Map(ticks.map((t, i) => [t.symbol, i]))
  return ticks.filter((t, i) => last.get(t.symbol) === i)
}

/**
 * Whether the stream's token still authenticates: the two checks of the security guard
 * (kernel/http/security.ts), the token (expired, revoked: a sign-out) and its principal (enabled, at the
 * token's session epoch: a password change, a sign-out everywhere, a disable); and, for an account's
 * stream (`groupId`), that the account is still in the group it is priced for (read from the record the
 * principal check answers with: the account is read once).
 */
async function sessionHolds(ctx: MarketCtx, brand: Brand, token: string | null, groupId: number | null) {
  const session = token ? await ctx.tokens.verify(token) : null
  if (!session || session.brandId !== brand.id) return false
  const principal = await ctx.ports.get(PrincipalsPort).current(session)
  if (principal === null) return false
  if (groupId === null) return true
  // an account session's principal is its account's record (auth/principals.ts)
  return session.type === 'SESSION_USER' && (principal as AccountRecord).groupId === groupId
}

/** The account's group (of `brand`), or null when the account is gone or another brand's. */
async function accountGroup(ctx: MarketCtx, brand: Brand, login: number) {
  const account = await ctx.accounts.read.account(login)
  return account && account.brandId === brand.id ? account.groupId : null
}

/**
 * What a stream starts with, read before the answer (a dependency away, the bus or the cache, is a 503 in
 * the error shape, not a stream that fails after its 200 went out): after a Last-Event-ID the ticks missed
 * (past MAX_REPLAY the latest of each symbol), else the latest quote of each symbol; and `at`, the bus id
 * all of it is as of (never above the bus's newest): the stream sends no live tick at or below it.
 */
async function opening(
  ctx: MarketCtx,
  wanted: string[],
  set: Set<string>,
  request: Request,
  event: (t: Tick) => Promise<string>,
) {
  const first = ['retry: 2000\n\n']
  const lastEventId = request.headers.get('last-event-id')
  const last = lastEventId !== null && isBusId(lastEventId) ? lastEventId : null
  let replay = last === null ? null : await ctx.quotes.since(last)
  // an id the bus has not reached (another deployment's, a bus started again, a client's bug) is an
  // unknown one: the latest quotes, and the stream stands at the bus's newest, not ahead of it (where an
  // edge stream following the bus would hear nothing until the bus passed it). Only an empty replay can
  // be one: the bus's newest is read for it alone
  if (last !== null && replay?.length === 0 && compareIds(last, await ctx.quotes.newestId()) > 0)
    replay = null
  if (replay) {
    const missed = replay.filter((t) => set.has(t.symbol))
    // a quote is superseded by the next: past a bound only the latest of each symbol is worth its bytes
    // (in bus order: the ids a client sees only move forward)
    const sent = missed.length > MAX_REPLAY ? latestOfEach(missed) : missed
    for (const t of sent) first.push(await event(t))
    return { first, at: replay.at(-1)?.id ?? (last as string) }
  }
  if (ctx.edge) {
    // the shared quotes are as of the entry the engine wrote them for, read with them: the engine writes
    // them after its own bus read, so they may be behind the bus (the ticks after that id are followed);
    // never above the bus's newest, and the bus's newest where the engine did not say
    const [shared, newest] = await Promise.all([ctx.quotes.sharedAsOf(wanted), ctx.quotes.newestId()])
    const at = shared.at !== null && compareIds(shared.at, newest) <= 0 ? shared.at : newest
    for (const [i, s] of wanted.entries()) {
      const q = shared.quotes[i]
      if (q) first.push(await event({ symbol: s, ...q, id: at }))
    }
    return { first, at }
  }
  // this instance's quotes are as of the last entry its bus reader applied, before its first where the
  // reader stands (it may be behind the bus: the ticks after it still come live, with later ids). The
  // bus's newest is read all the same: a bus away is a 503 before the answer, as for a resume
  const newest = await ctx.quotes.newestId()
  const at = ctx.quotes.appliedId() ?? newest
  for (const s of wanted) {
    const q = await ctx.quotes.get(s)
    if (q) first.push(await event({ symbol: s, ...q, id: at }))
  }
  return { first, at }
}

/**
 * Server-Sent Events of quotes for chosen symbols. A user session gets its group's prices (spread
 * settings applied, hidden symbols refused); staff get source prices. Each event's id is the bus id
 * of its tick (global: any instance resumes it); a reconnect with Last-Event-ID replays the ticks missed (or, when they are no longer buffered,
 * the latest quote of each symbol). A comment line every 15 s keeps proxies from closing the stream. At
 * the edge a stream reads the bus itself, twice a second (quotes reach it up to half a second later).
 * The stream ends when `request` is aborted (the client went), the instance closes, or its session no
 * longer holds or the account moved to another group (checked every SESSION_CHECK_MS: the reconnect is
 * priced for the new group). Live ticks are listened to before the replay is read; a tick's id at or below
 * the last one sent is not sent (one that came both in the replay and live, from a reader behind the bus).
 */
export async function quoteStream(
  ctx: MarketCtx,
  brand: Brand,
  session: Session,
  symbolsParam: string,
  request: Request,
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
  // a slot of the principal's, given back when the stream ends or its start fails
  const release = await takeSlot(ctx, session)
  if (!release)
    throw new ApiError(
      429,
      'TOO_MANY_REQUESTS',
      `at most ${MAX_STREAMS_PER_PRINCIPAL} quote streams open at once per account or staff member; close one first`,
    )
  try {
    return await startStream(ctx, brand, session, wanted, request, release)
  } catch (e) {
    await release()
    throw e
  }
}

async function startStream(
  ctx: MarketCtx,
  brand: Brand,
  session: Session,
  wanted: string[],
  request: Request,
  release: () => Promise<void>,
) {
  await ctx.refdata.fresh()
  let groupId: number | null = null
  if (session.type === 'SESSION_USER') {
    groupId = await accountGroup(ctx, brand, session.login!)
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
  // the live ticks of this instance are listened to before the replay (or the latest quotes) is read, and
  // held until the stream starts: a tick that arrives meanwhile is sent after it, not lost between the two.
  // At the edge the stream follows the bus itself from where what it starts with ends (`at`).
  let early: Tick[] = []
  let live: (ticks: Tick[]) => Promise<void> = async (ticks) => {
    early.push(...ticks.filter((t) => set.has(t.symbol)))
    // bounded as the replay is: a quote is superseded by the next
    if (early.length > MAX_REPLAY) early = latestOfEach(early)
  }
  let unsubscribe = ctx.edge ? () => {} : ctx.quotes.onTicks((ticks) => live(ticks))
  let first: string[]
  let at: string
  try {
    ;({ first, at } = await opening(ctx, wanted, set, request, event))
  } catch (e) {
    unsubscribe()
    throw e
  }
  const token = extractToken(
    request.headers.get('authorization'),
    request.headers.get('cookie'),
    ctx.config.jwt.cookieName,
  )
  const signal = request.signal
  const closing = ctx.closing
  let keepAlive: ReturnType<typeof setInterval> | undefined
  let sessionCheck: ReturnType<typeof setInterval> | undefined
  let lifetime: ReturnType<typeof setTimeout> | undefined
  // the client went, the consumer cancelled, the session ended, or this instance shuts down (the client
  // reconnects elsewhere with Last-Event-ID); it may come while the start still awaits: nothing is
  // subscribed after it, and the live ticks listened to since the start are let go. Both signals are listened to apart and let go here: a signal derived from the
  // process-long `closing` (AbortSignal.any) would keep every stream alive with it.
  let ended = false
  let close = () => {}
  const end = async () => {
    if (ended) return
    ended = true
    unsubscribe()
    clearInterval(keepAlive)
    clearInterval(sessionCheck)
    clearTimeout(lifetime)
    signal.removeEventListener('abort', end)
    closing.removeEventListener('abort', end)
    // the slot is given back before the answer ends: a Worker drops what is still pending after it, and
    // the client's reconnect (2 s later) would find its own slot still held
    await release()
    close()
  }
  // every write goes through one chain, in order: the ticks as they come, what was held back once the
  // reader has room again, and the last id at the end of the stream's lifetime
  let chain: Promise<void> = Promise.resolve()
  const serial = (f: () => Promise<void>) => {
    const run = chain.then(f)
    chain = run.catch(() => {})
    return run
  }
  let pull = (): Promise<void> | undefined => undefined
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        close = () => {
          try {
            controller.close()
          } catch {}
        }
        const send = (text: string) => {
          if (text && !ended) controller.enqueue(enc.encode(text))
        }
        const room = () => (controller.desiredSize ?? 0) > 0
        for (const text of first) send(text)
        // where the bus stands, for the id the stream leaves its client with (a quiet symbol's client would
        // otherwise resume from its last quote and be replayed everything since); moved once a tick is
        // sent or held, so the id never passes a quote the client has not had. Also the floor of what is
        // sent: a tick at or below it (in what the stream started with, or sent already) is not sent again
        let seen = at
        // whether a tick above `seen` has come: the ticks come in bus order, so only those before it (the
        // first after the start: held while it started, or from a reader behind what it started with) can
        // be at or below it, and the ids are compared only until then
        let caughtUp = !isBusId(at)
        // a reader that does not keep up (its queue past QUEUE_BYTES): the latest tick per symbol waits
        // here, in bus order, until it has room (a quote replaces the one before it; the ids the client
        // sees still only move forward). At most one tick per symbol: memory bounded whatever the rate.
        const held = new Map<string, Tick>()
        const flush = async (all = false) => {
          for (const [symbol, t] of held) {
            if (ended || (!all && !room())) return
            held.delete(symbol)
            send(await event(t))
          }
        }
        pull = () => (held.size ? serial(() => flush()) : undefined)
        const listener = (ticks: Tick[]) =>
          serial(async () => {
            // the ticks of one bus entry share its id and come in one call
            let from = 0
            if (!caughtUp) {
              const floor = seen
              from = ticks.findIndex((t) => compareIds(t.id, floor) > 0)
              if (from < 0) return
              caughtUp = true
            }
            for (let i = from; i < ticks.length; i++) {
              const t = ticks[i]!
              if (!set.has(t.symbol)) continue
              if (ended) return
              if (held.size || !room()) {
                held.delete(t.symbol)
                held.set(t.symbol, t)
              } else send(await event(t))
            }
            if (ended) return
            if (ticks.length) seen = ticks.at(-1)!.id
            if (held.size && room()) await flush()
          })
        if (ended || signal.aborted || closing.aborted) return end()
        if (ctx.edge) unsubscribe = ctx.quotes.follow(at, listener, EDGE_POLL_MS)
        else {
          // what came while the stream started, then the ticks as they come (a failure: the client
          // reconnects with its Last-Event-ID)
          const waiting = early
          early = []
          live = listener
          if (waiting.length) listener(waiting).catch(end)
        }
        keepAlive = setInterval(() => {
          if (room()) send(': keep-alive\n\n')
        }, 15_000)
        let checking = false
        sessionCheck = setInterval(async () => {
          if (checking || ended) return
          checking = true
          // a dependency away fails closed, as the guard does: the client reconnects and is authorized again;
          // an account moved to another group reconnects to be priced (and its symbols checked) for it
          const holds = await sessionHolds(ctx, brand, token, groupId).catch(() => false)
          checking = false
          if (!holds) end()
        }, SESSION_CHECK_MS)
        lifetime = setTimeout(
          () =>
            void serial(async () => {
              // what is held back goes first (one event per symbol at most): the id after it must not skip it
              await flush(true)
              // an id with no data moves the client's Last-Event-ID (EventSource) without an event
              if (seen && isBusId(seen)) send(`id: ${seen}\n\n`)
              end()
            }).catch(end),
          ctx.edge ? EDGE_STREAM_MS : STREAM_MS,
        )
        signal.addEventListener('abort', end, { once: true })
        closing.addEventListener('abort', end, { once: true })
      },
      pull: () => pull(),
      cancel: end,
    },
    new ByteLengthQueuingStrategy({ highWaterMark: QUEUE_BYTES }),
  )
  return new Response(stream, {
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
    },
  })
}
