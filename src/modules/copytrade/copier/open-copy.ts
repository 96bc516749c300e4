import { and, eq, inArray, lt, or, sql } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import { currencyDecimals } from '../../accounts'
import { conversionRate, isTradingOpen } from '../../market'
import { profitInAccount } from '../../trading'
import { accountOf } from '../accounts-of'
import type { CopyCtx } from '../context'
import { managedShare } from '../domain/fees'
import { copiesOpens, type SubscriptionSettings, symbolAllowed, VOLUME_MODE } from '../domain/settings'
import { copyOrder, copyVolume, slippagePoints } from '../domain/sizing'
import { SUB_STATUS } from '../domain/status'
import { copyLinks, copyMasters, copyRecords, copySubscriptions } from '../schema'
import { caseOfLink } from './case-of-link'
import { closeLinks } from './close-copy'
import { type Allocation, allocations, sharedBy } from './equity'
import { countCopiesTx, filledState, fillRecordTx, isPending } from './fills'
import { generation, openKey, tradeKey } from './keys'
import { PAUSE_CANCELLED } from './link-states'
import { stopsAfterOpen } from './modify-copy'
import { refusalReason } from './refusals'
import { settleSoon } from './rewards'

/** How long one executor holds a link it opens; after it another (the reconcile job) may take it over. */
const OPEN_LEASE_MS = 15_000
const CHUNK = 400
/** Links per statement when their outcomes are recorded (records have 21 columns: 2,100 values). */
const FINISH_CHUNK = 100
/**
 * How many times a chunk decides again, at once, the copies trading's commit refused because their
 * subscription's settings changed after they were decided; beyond that they wait, pending, for
 * copytrade.reconcile.
 */
const REDECIDE_ROUNDS = 2

type Link = typeof copyLinks.$inferSelect
type Sub = typeof copySubscriptions.$inferSelect

/**
 * The key of a link's open record: one per decision. `resync` is 0 for the fan-out's links, 1 for those a
 * resync made, and grows by 2 each time a resync revives a skipped link (a new decision, a new record).
 */
const recordKey = (l: Pick<Link, 'id' | 'resync'>) =>
  l.resync > 1 ? `open:${l.id}:${l.resync}` : `open:${l.id}`

interface Outcome {
  link: Link
  sub: Sub
  copied: boolean
  reason: string
  message: string
  decidedAt: number
  followerTicket?: number
  followerPrice?: number
  followerTime?: number
  volume?: number
  /** The master's volume the copy was sized on (the link's masterVolume from then on). */
  masterVolume?: number
  slippagePoints?: number
  slippageMinor?: number | null
  /** Refused by trading's commit: the settings it was decided on changed meanwhile; decided again. */
  again?: boolean
}

/** Why trading's commit no longer wanted a copy: a skip, or null when only its settings changed. */
type Unwanted = { reason: string; message: string } | null

/**
 * The copies on their way to trading's commit: link id -> its subscription and the settings (their JSON
 * text, the version) it was decided on, asked by `stillWanted` in the commit (OpenInput.whileWanted, whose
 * id is the link's), which records in `why` why it refused one (read by the executor on the refusal: no
 * read of its own). In this process: the write port's commit runs where its caller does.
 */
const inFlight = new Map<number, { sub: number; settings: string; why?: Unwanted }>()

/**
 * Opens the follower positions of links decided by the fan-out (copier/consumers.ts) or left by an
 * executor that died (the reconcile job): claims them under a lease, checks each against its
 * subscription (README: skip reasons), opens through trading's write port with the key
 * `copy:<subscription>:<master ticket>:open` (keys.ts; all at once: the group commit takes them together), and
 * records every outcome in one transaction. A link taken over from a dead executor first asks trading
 * whether its key already opened a position, so a copy is never opened twice.
 */
export async function openLinks(ctx: CopyCtx, ids: number[], round = 0) {
  const chunks: number[][] = []
  for (let i = 0; i < ids.length; i += CHUNK) chunks.push(ids.slice(i, i + CHUNK))
  await Promise.all(chunks.map((c) => openChunk(ctx, c, round)))
}

async function openChunk(ctx: CopyCtx, ids: number[], round: number) {
  const now = ctx.clock.now()
  // this executor's lease: what it writes back (the outcomes, or pending again) is written only while the
  // link still holds it, not over an executor that took the link over once it ran out (the reconcile job)
  const lease = now + OPEN_LEASE_MS
  const links = await ctx.db
    .update(copyLinks)
    .set({
      status: 'opening',
      leaseUntil: lease,
      attempts: sql`${copyLinks.attempts} + 1`,
      updatedAt: now,
    })
    .where(
      and(
        inArray(copyLinks.id, ids),
        or(
          eq(copyLinks.status, 'pending'),
          and(eq(copyLinks.status, 'opening'), lt(copyLinks.leaseUntil, now)),
        ),
      ),
    )
    .returning()
  if (links.length === 0) return
  // the subscriptions with their masters, in one read: a master disabled (by its owner or by staff) or
  // deleted since its links were decided is copied no more
  const rows = await ctx.db
    .select({ sub: copySubscriptions, enabled: copyMasters.enabled, deletedAt: copyMasters.deletedAt })
    .from(copySubscriptions)
    .leftJoin(copyMasters, eq(copyMasters.id, copySubscriptions.masterId))
    .where(inArray(copySubscriptions.id, [...new Set(links.map((l) => l.subscriptionId))]))
  const subs = new Map(rows.map((r) => [r.sub.id, r.sub]))
  const enabledMasters = new Set(
    rows.filter((r) => r.enabled === 1 && r.deletedAt === null).map((r) => r.sub.masterId),
  )
  const masterLogins = [...new Set(links.map((l) => l.masterLogin))]
  // balances and equities only for the subscriptions that size by them
  const ratio = links.filter((l) => {
    const mode = (JSON.parse(subs.get(l.subscriptionId)!.settings) as SubscriptionSettings).volume_mode
    return mode === VOLUME_MODE.EQUITY_RATIO || mode === VOLUME_MODE.BALANCE_RATIO
  })
  const ratioFollowers = [...new Set(ratio.map((l) => l.followerLogin))]
  const [figures, allocated] =
    ratio.length > 0
      ? await Promise.all([
          ctx.trading.figures([...masterLogins, ...ratioFollowers]),
          allocations(ctx.db, ratioFollowers),
        ])
      : [new Map(), new Map<number, Allocation>()]
  const quotes = await ctx.market.quoteLookup()
  // what every link of the chunk shares: the master positions and accounts
  const masters = await ctx.trading.orderStates([...new Set(links.map((l) => l.masterTicket))])
  const masterCurrency = new Map<number, string>()
  for (const login of masterLogins) {
    const { group } = await accountOf(ctx, login)
    if (group) masterCurrency.set(login, group.currency)
  }
  const shared = { figures, allocated, quotes, masters, masterCurrency, enabledMasters }
  const outcomes = await Promise.all(
    links.map((link) => ctx.limit(() => openOne(ctx, link, subs.get(link.subscriptionId)!, shared, now))),
  )
  const decided = outcomes.filter((o) => !o.again)
  if (decided.length > 0) await finishOpens(ctx, decided, lease)
  const again = outcomes.filter((o) => o.again).map((o) => o.link.id)
  if (again.length === 0) return
  // their settings changed after they were decided: back to pending, decided again on the settings now
  // (those another executor took over meanwhile are its own)
  await ctx.db
    .update(copyLinks)
    .set({ status: 'pending', leaseUntil: 0, slot: 0, updatedAt: ctx.clock.now() })
    .where(
      and(inArray(copyLinks.id, again), eq(copyLinks.status, 'opening'), eq(copyLinks.leaseUntil, lease)),
    )
  if (round < REDECIDE_ROUNDS) await openLinks(ctx, again, round + 1)
}

/**
 * The follower side of ratio sizing: the money this subscription manages (its capital, plus what its
 * copies made, less the fees it paid), capped at its share of what the account really holds
 * (domain/fees.ts: managedShare; an account that lost money on its own trades sizes copies on what is
 * left), with the account's floating result in proportion, so an account that follows several masters
 * with a share each sizes each copy on its share.
 */
function managed(
  sub: Sub,
  account: { balance: number; equity: number } | null | undefined,
  allocated: Allocation | undefined,
) {
  if (!account) return account
  const manages = sub.capitalMinor + sub.resultMinor - sub.feesMinor
  const balance = Math.min(
    manages,
    managedShare(manages, sharedBy(allocated, sub.id, manages), account.balance),
  )
  const share = account.balance > 0 ? Math.min(1, Math.max(0, balance / account.balance)) : 0
  return { balance, equity: balance + (account.equity - account.balance) * share }
}

async function openOne(
  ctx: CopyCtx,
  link: Link,
  sub: Sub,
  shared: {
    figures: Awaited<ReturnType<CopyCtx['trading']['figures']>>
    allocated: Map<number, Allocation>
    quotes: Awaited<ReturnType<CopyCtx['market']['quoteLookup']>>
    masters: Awaited<ReturnType<CopyCtx['trading']['orderStates']>>
    masterCurrency: Map<number, string>
    enabledMasters: Set<number>
  },
  decidedAt: number,
): Promise<Outcome> {
  const { figures, quotes } = shared
  const skip = (reason: string, message: string): Outcome => ({
    link,
    sub,
    copied: false,
    reason,
    message,
    decidedAt,
  })
  const key = openKey(link)
  // the master's order as it is now, and the volume the copy is sized on: the link's, or less when the
  // master closed part of it since the link was decided. A master's partial close moves only open links
  // (close-copy.ts partialCloseLinks): a link still pending or opening then (left for the reconcile job by a
  // resync at the edge, taken over from an executor that died, or a fan-out's behind its executor) would
  // be opened at the size the master no longer holds
  const master = shared.masters.get(link.masterTicket)
  const masterVolume =
    master && master.volume > 0 ? Math.min(link.masterVolume, master.volume) : link.masterVolume
  // taken over from an executor that died: its open may have committed
  if (link.attempts > 1) {
    const ticket = await openedBefore(ctx, link, key)
    if (ticket !== null) {
      const o = (await ctx.trading.orderStates([ticket])).get(ticket)
      return {
        link,
        sub,
        copied: true,
        reason: '',
        message: 'opened by an earlier attempt',
        decidedAt,
        followerTicket: ticket,
        followerPrice: o?.openPrice ?? 0,
        followerTime: o?.openTime ?? decidedAt,
        volume: o?.volume ?? 0,
        // what the earlier attempt was sized on is not known: at most the master's volume now
        masterVolume,
      }
    }
  }
  const s = JSON.parse(sub.settings) as SubscriptionSettings
  if (sub.status !== SUB_STATUS.ACTIVE)
    return skip('SUBSCRIPTION_NOT_ACTIVE', `the subscription is ${sub.status === 1 ? 'paused' : 'disabled'}`)
  if (!shared.enabledMasters.has(sub.masterId))
    return skip('MASTER_DISABLED', `master ${sub.masterId} is disabled: it is copied no more`)
  // the follower switched to CLOSE_ONLY after the link was decided (the fan-out or a resync)
  if (!copiesOpens(s.copy_mode)) return skip('COPY_MODE', 'the subscription copies closes only')
  if (link.resync === 0 && decidedAt - link.masterTime > s.open_ttl_seconds * 1000)
    return skip(
      'SIGNAL_TOO_OLD',
      `the master filled ${decidedAt - link.masterTime} ms ago (open_ttl_seconds ${s.open_ttl_seconds})`,
    )
  if (!symbolAllowed(s, link.symbol))
    return skip('SYMBOL_FILTERED', `${link.symbol} is filtered out by symbols_mode ${s.symbols_mode}`)
  const { account, group } = await accountOf(ctx, link.followerLogin)
  if (!account || !group || account.enable !== 1 || account.enableReadOnly === 1)
    return skip('ACCOUNT_DISABLED', `account ${link.followerLogin} may not trade`)
  const gs = await ctx.market.refdata.forGroup(group.id, link.symbol)
  if (gs?.sec.show !== 1 || gs.sec.trade !== 1 || gs.info.trade === 0)
    return skip('SYMBOL_NOT_ALLOWED', `${link.symbol} is not tradable for group ${group.name}`)
  if (!isTradingOpen(gs.info.sessionList, decidedAt))
    return skip('MARKET_CLOSED', `${link.symbol} is outside its session`)
  const decimals = currencyDecimals(group.currency)
  if (s.daily_loss_limit > 0 && sub.lossDay === Math.floor(decidedAt / 86_400_000)) {
    const lost = -sub.dayResultMinor / 10 ** decimals
    if (lost >= s.daily_loss_limit)
      return skip(
        'DAILY_LOSS_LIMIT',
        `copies lost ${lost} ${group.currency} today (daily_loss_limit ${s.daily_loss_limit})`,
      )
  }
  const quote = await ctx.market.groupPrice(gs)
  if (!quote) return skip('NO_PRICE', `no price for ${link.symbol}`)
  const mf = figures.get(link.masterLogin)
  const ff = managed(sub, figures.get(link.followerLogin), shared.allocated.get(link.followerLogin))
  const major = (x: { balance: number; equity: number } | null | undefined, d: number) => ({
    balance: (x?.balance ?? 0) / 10 ** d,
    equity: (x?.equity ?? 0) / 10 ** d,
  })
  const masterCurrency = shared.masterCurrency.get(link.masterLogin) ?? group.currency
  const sized = copyVolume({
    mode: s.volume_mode,
    param: s.volume_param,
    masterVolume,
    master: major(mf, currencyDecimals(masterCurrency)),
    follower: major(ff, decimals),
    rate: conversionRate(group.currency, masterCurrency, quotes),
    minVolume: s.min_volume,
    maxVolume: s.max_volume,
    // the symbol's own max_volume caps a copy as the group's lot_max does (trading refuses an order above it)
    lot: gs.info.maxVolume > 0 ? { ...gs.sec, lotMax: Math.min(gs.sec.lotMax, gs.info.maxVolume) } : gs.sec,
  })
  if (!sized.ok) return skip(sized.reason, sized.message)
  if (link.masterCloseTime !== null || (master && master.state !== 'open' && master.state !== 'pending'))
    return skip('MASTER_CLOSED', `the master's order ${link.masterTicket} is no longer open`)
  const order = copyOrder(
    { cmd: link.masterCmd, sl: master?.sl ?? 0, tp: master?.tp ?? 0 },
    s.reverse === 1,
    s.copy_sl_tp === 1,
  )
  // a pending order is copied as the same order at the master's price: no slippage to guard
  const pending = link.masterCmd > 1
  const price = order.cmd % 2 === 0 ? quote.ask : quote.bid
  if (s.max_slippage_points > 0 && link.resync === 0 && !pending) {
    const pts = slippagePoints(order.cmd, link.masterPrice, price, gs.info.digits)
    if (pts > s.max_slippage_points)
      return skip(
        'SLIPPAGE',
        `the price is ${pts} points from the master's fill (max_slippage_points ${s.max_slippage_points})`,
      )
  }
  // last, once nothing else skips it: a link that takes no slot takes none from the links after it
  if (s.max_positions > 0) {
    const open = await takeSlot(ctx, sub.id, link.id, s.max_positions)
    if (open !== null)
      return skip('MAX_POSITIONS', `${open} copies are open (max_positions ${s.max_positions})`)
  }
  const flight: { sub: number; settings: string; why?: Unwanted } = { sub: sub.id, settings: sub.settings }
  inFlight.set(link.id, flight)
  const r = await ctx.trading
    .open({
      brandId: link.brandId,
      actor: `copy:${sub.id}`,
      idempotencyKey: key,
      login: link.followerLogin,
      cmd: order.cmd,
      volume: sized.volume,
      symbol: link.symbol,
      sl: order.sl,
      tp: order.tp,
      ...(pending ? { open_price: link.masterPrice, expiration: master?.expiration ?? 0 } : {}),
      comment: `copy #${link.masterTicket}`,
      // checked where the copy commits: never opened once the master's order is gone, nor once the
      // subscription was paused or ended, its master disabled or its settings changed (its answer then
      // says the copy was not made)
      whileOpen: link.masterTicket,
      whileWanted: { id: link.id, wanted: stillWanted },
    })
    .finally(() => inFlight.delete(link.id))
  // why the commit refused it, as stillWanted read it there (not read again: one read a batch, not a link);
  // not recorded (never the case): decided again, on what the subscription and its master are then
  if (!r.ok && r.code === 'NO_LONGER_WANTED')
    return flight.why
      ? skip(flight.why.reason, flight.why.message)
      : { ...skip('', 'the settings changed: decided again'), again: true }
  if (!r.ok) return skip(refusalReason(r.code, r.reason), r.reason)
  const filled = ctx.clock.now()
  const pts = pending ? 0 : slippagePoints(order.cmd, link.masterPrice, r.price, gs.info.digits)
  const slip = pending
    ? 0
    : profitInAccount(gs.info, order.cmd, sized.volume, link.masterPrice, r.price, group.currency, quotes)
  return {
    link,
    sub,
    copied: true,
    reason: '',
    message: link.resync ? 'copied at the current price (resync)' : '',
    decidedAt,
    followerTicket: r.order,
    followerPrice: r.price,
    followerTime: filled,
    volume: sized.volume,
    masterVolume,
    slippagePoints: pts,
    slippageMinor: slip === null ? null : Math.round(slip * 10 ** decimals),
  }
}

/**
 * The follower order an earlier attempt at this link's open placed, or null. A revived link opened by a
 * version before the open key named its generation used the link's plain key: that order counts when it
 * is a position (open or closed), not the pending copy a pause cancelled under the same key.
 */
async function openedBefore(ctx: CopyCtx, link: Link, key: string) {
  const ticket = await ctx.trading.keyTicket(link.followerLogin, key)
  if (ticket !== null || link.resync <= 1) return ticket
  const legacy = await ctx.trading.keyTicket(link.followerLogin, tradeKey(link, 'open'))
  if (legacy === null) return null
  const state = (await ctx.trading.orderStates([legacy])).get(legacy)?.state
  return state === 'open' || state === 'closed' ? legacy : null
}

/**
 * Which of these copies (link ids) are still wanted, read in trading's commit (OpenInput.whileWanted): their
 * subscription ACTIVE, its master enabled, and its settings those the copy was decided on (`inFlight`). One
 * statement for the batch, as the status alone was; why each one not wanted is not (a skip, or null: its
 * settings changed and it is decided again) is recorded on its `inFlight` entry for its executor.
 */
async function stillWanted(tx: Tx, ids: number[]) {
  const asked = ids.flatMap((id) => {
    const f = inFlight.get(id)
    return f ? [{ id, f }] : []
  })
  if (asked.length === 0) return new Set<number>()
  const rows = await tx
    .select({
      id: copySubscriptions.id,
      masterId: copySubscriptions.masterId,
      status: copySubscriptions.status,
      settings: copySubscriptions.settings,
      enabled: copyMasters.enabled,
      deletedAt: copyMasters.deletedAt,
    })
    .from(copySubscriptions)
    .leftJoin(copyMasters, eq(copyMasters.id, copySubscriptions.masterId))
    .where(inArray(copySubscriptions.id, [...new Set(asked.map((a) => a.f.sub))]))
  const now = new Map(rows.map((r) => [r.id, r]))
  const still = new Set<number>()
  for (const { id, f } of asked) {
    const r = now.get(f.sub)
    f.why = unwantedBecause(r)
    if (f.why === null && r?.settings === f.settings) still.add(id)
  }
  return still
}

/**
 * Why a copy of this subscription (as stillWanted read it) is not wanted whatever its settings: the
 * subscription no longer ACTIVE or its master disabled (a skip), or null.
 */
function unwantedBecause(
  r: { masterId: number; status: number; enabled: number | null; deletedAt: number | null } | undefined,
): Unwanted {
  if (!r || r.status !== SUB_STATUS.ACTIVE)
    return {
      reason: 'SUBSCRIPTION_NOT_ACTIVE',
      message: `the subscription is ${r?.status === SUB_STATUS.PAUSED ? 'paused' : 'disabled'}`,
    }
  if (r.enabled !== 1 || r.deletedAt !== null)
    return { reason: 'MASTER_DISABLED', message: `master ${r.masterId} is disabled: it is copied no more` }
  return null
}

/**
 * One of the subscription's max_positions slots for this link, or the count of copies that fill them
 * (null: taken). Counted and taken in one write transaction (BEGIN IMMEDIATE: one writer at a time, on
 * sqld too), so two executors opening links of one subscription at once never both take the last slot;
 * open and closing copies hold a slot, and so do links being opened that took one.
 */
async function takeSlot(ctx: CopyCtx, subId: number, linkId: number, max: number) {
  return ctx.db.transaction(async (tx) => {
    const [n] = await tx
      .select({ n: sql<number>`count(*)` })
      .from(copyLinks)
      .where(
        and(
          eq(copyLinks.subscriptionId, subId),
          sql`${copyLinks.id} <> ${linkId}`,
          or(
            inArray(copyLinks.status, ['open', 'closing']),
            and(eq(copyLinks.status, 'opening'), eq(copyLinks.slot, 1)),
          ),
        ),
      )
    if (n!.n >= max) return n!.n
    // a link taken over keeps the slot its first executor took (that one may still be opening it)
    await tx
      .update(copyLinks)
      .set({ slot: 1 })
      .where(and(eq(copyLinks.id, linkId), eq(copyLinks.status, 'opening')))
    return null
  })
}

/**
 * Records every outcome of a chunk in one transaction; a link another executor finished, or took over once
 * this one's lease ran out (it records it: an open this one placed is found under its key), is left alone.
 */
async function finishOpens(ctx: CopyCtx, outcomes: Outcome[], lease: number) {
  const now = ctx.clock.now()
  const rebates: number[] = []
  // copies whose master closed, or whose subscription ended, while they were being opened: closed at
  // once, not left behind
  const orphans: number[] = []
  // of those, the ones the follower's stop overtook: no volume counted, nothing owed for them
  const stopped = new Set<number>()
  // the copies this call recorded open
  const opened: Outcome[] = []
  await ctx.uow.run(async (tx) => {
    // a few statements per chunk, not one per link: on sqld each statement is a round trip
    const done = new Set<number>()
    const move = async (batch: Outcome[], copied: boolean) => {
      if (batch.length === 0) return
      const ids = batch.map((o) => o.link.id)
      const byId = (value: (o: Outcome) => number | string) => caseOfLink(batch, value)
      const rows = await tx
        .update(copyLinks)
        .set(
          copied
            ? {
                status: 'open',
                followerTicket: byId((o) => o.followerTicket!),
                followerVolume: byId((o) => o.volume!),
                // the master's volume the copy was sized on: a master's partial close (and the audit job)
                // closes the copy's part of what the master closes after it
                masterVolume: byId((o) => o.masterVolume ?? o.link.masterVolume),
                reason: '',
                updatedAt: now,
              }
            : { status: 'skipped', reason: byId((o) => o.reason), updatedAt: now },
        )
        .where(
          and(inArray(copyLinks.id, ids), eq(copyLinks.status, 'opening'), eq(copyLinks.leaseUntil, lease)),
        )
        .returning({
          id: copyLinks.id,
          masterCloseTime: copyLinks.masterCloseTime,
          subscriptionId: copyLinks.subscriptionId,
          masterCmd: copyLinks.masterCmd,
          followerTicket: copyLinks.followerTicket,
        })
      for (const r of rows) done.add(r.id)
      if (!copied || rows.length === 0) return
      // read in this transaction: a stop or a pause committed after the copy's commit is seen here (one
      // committed after this finds the link open and acts on it itself); one before it was refused by the
      // commit (whileWanted). A pause leaves a position placed while ACTIVE, and cancels a pending copy
      // not filled yet, as it cancels those it finds (subscription-status.ts).
      const status = new Map(
        (
          await tx
            .select({ id: copySubscriptions.id, status: copySubscriptions.status })
            .from(copySubscriptions)
            .where(
              and(
                inArray(copySubscriptions.id, [...new Set(rows.map((r) => r.subscriptionId))]),
                inArray(copySubscriptions.status, [SUB_STATUS.DISABLED, SUB_STATUS.PAUSED]),
              ),
            )
        ).map((s) => [s.id, s.status]),
      )
      const live = rows.filter((r) => r.masterCloseTime === null)
      const stoppedRows = live.filter((r) => status.get(r.subscriptionId) === SUB_STATUS.DISABLED)
      const paused = live.filter((r) => status.get(r.subscriptionId) === SUB_STATUS.PAUSED && isPending(r))
      const orders = await ctx.trading.orderStates(
        paused.map((r) => r.followerTicket!),
        tx,
      )
      const pausedRows = paused.filter((r) => orders.get(r.followerTicket!)?.state === 'pending')
      for (const r of [...stoppedRows, ...pausedRows]) stopped.add(r.id)
      for (const [reason, ids] of [
        ['the master closed', rows.filter((r) => r.masterCloseTime !== null)],
        ['the subscription ended while the copy was opened', stoppedRows],
        [PAUSE_CANCELLED, pausedRows],
      ] as const) {
        if (ids.length === 0) continue
        await tx
          .update(copyLinks)
          .set({ status: 'closing', reason, leaseUntil: 0, updatedAt: now })
          .where(
            and(
              inArray(
                copyLinks.id,
                ids.map((r) => r.id),
              ),
              eq(copyLinks.status, 'open'),
            ),
          )
        orphans.push(...ids.map((r) => r.id))
      }
    }
    for (let i = 0; i < outcomes.length; i += FINISH_CHUNK) {
      const part = outcomes.slice(i, i + FINISH_CHUNK)
      await move(
        part.filter((o) => o.copied),
        true,
      )
      await move(
        part.filter((o) => !o.copied),
        false,
      )
    }
    // a link another executor finished meanwhile is left alone
    const mine = outcomes.filter((o) => done.has(o.link.id))
    for (let i = 0; i < mine.length; i += FINISH_CHUNK)
      await tx
        .insert(copyRecords)
        .values(
          mine.slice(i, i + FINISH_CHUNK).map((o) => ({
            key: recordKey(o.link),
            brandId: o.link.brandId,
            subscriptionId: o.sub.id,
            linkId: o.link.id,
            action: 'open' as const,
            result: o.copied ? ('copied' as const) : ('skipped' as const),
            reason: o.reason,
            message: o.message,
            symbol: o.link.symbol,
            masterTicket: o.link.masterTicket,
            masterPrice: o.link.masterPrice,
            masterTime: o.link.masterTime,
            decidedAt: o.decidedAt,
            followerTicket: o.followerTicket ?? null,
            followerPrice: o.followerPrice ?? null,
            followerTime: o.followerTime ?? null,
            volume: o.volume ?? 0,
            slippagePoints: o.slippagePoints ?? null,
            slippageMinor: o.slippageMinor ?? null,
            createdAt: now,
          })),
        )
        .onConflictDoNothing()
    const placed = mine.filter((o) => o.copied && !stopped.has(o.link.id))
    opened.push(...placed)
    // a pending copy counts once it fills (copyFilledTx); one that filled before this commit counts now,
    // read in this transaction: a fill committed after it finds the link and is counted by its event
    const pendings = placed.filter((o) => isPending(o.link))
    const states = await ctx.trading.orderStates(
      pendings.map((o) => o.followerTicket!),
      tx,
    )
    const counted = placed.filter((o) => !isPending(o.link))
    for (const o of pendings)
      if (
        filledState(states.get(o.followerTicket!)?.state) &&
        (await fillRecordTx(
          ctx,
          tx,
          { ...o.link, followerTicket: o.followerTicket!, followerVolume: o.volume! },
          o.sub,
        ))
      )
        counted.push(o)
    rebates.push(...(await countCopiesTx(ctx, tx, counted)))
  })
  if (rebates.length > 0) await settleSoon(ctx, rebates)
  if (orphans.length > 0) await closeLinks(ctx, orphans)
  // the master's stops moved while the copy was opened: the copy gets the levels they are at now
  await stopsAfterOpen(
    ctx,
    opened
      .filter((o) => !orphans.includes(o.link.id))
      .map((o) => ({
        link: { ...o.link, followerTicket: o.followerTicket! },
        sub: o.sub,
        generation: generation(o.link),
      })),
  )
}
