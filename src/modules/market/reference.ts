import { eq } from 'drizzle-orm'
import type { KeyValueStore } from '../../kernel/cache'
import type { Clock } from '../../kernel/clock'
import type { Db } from '../../kernel/db/client'
import { SingleFlight } from '../../kernel/single-flight'
import type { Quote } from './domain/conversion'
import { groupQuote, isPositiveQuote } from './domain/pricing'
import type { DaySessions } from './domain/sessions'
import { groupSecurities, groupSymbols, symbols } from './schema'
import { SharedVersion } from './shared-version'

type SymbolRow = typeof symbols.$inferSelect
type SecurityRow = typeof groupSecurities.$inferSelect
type OverrideRow = typeof groupSymbols.$inferSelect
/** A group's security settings by security group, and its symbol overrides by symbol. */
type GroupSettings = readonly [Map<string, SecurityRow>, Map<string, OverrideRow>]

export interface SymbolInfo extends SymbolRow {
  sessionList: DaySessions[]
}

/** A symbol as a group sees it: the symbol, the group's security settings and its overrides applied. */
export interface GroupSymbol {
  info: SymbolInfo
  sec: SecurityRow
  spread: number
  spreadBalance: number
  marginDivider: number
}

/** A raw (feed) quote as the group sees it: its spread, spread balance and spread_diff applied. */
export const quoteForGroup = (raw: Quote, gs: GroupSymbol): Quote =>
  groupQuote(raw, {
    digits: gs.info.digits,
    spread: gs.spread,
    spreadBalance: gs.spreadBalance,
    spreadDiff: gs.sec.spreadDiff,
  })

/**
 * quoteForGroup, or null where the group's spread settings put a side at 0 or below (a tiny source price
 * under a fixed spread): the group has no price then, as without a quote.
 */
export function pricedForGroup(raw: Quote, gs: GroupSymbol): Quote | null {
  const q = quoteForGroup(raw, gs)
  return isPositiveQuote(q) ? q : null
}

/**
 * quoteForGroup for valuation (equity, margin, a stop-out's order of losses): a side at 0 or below counts
 * at one point, so an account holding such a symbol stays priced and its other positions are still
 * watched; nothing fills at it (fills use pricedForGroup).
 */
export function valuedForGroup(raw: Quote, gs: GroupSymbol): Quote {
  const q = quoteForGroup(raw, gs)
  if (isPositiveQuote(q)) return q
  const point = 10 ** -gs.info.digits
  return { ...q, bid: Math.max(q.bid, point), ask: Math.max(q.ask, point) }
}

/** Symbols as some groups see them, looked up without awaiting (ReferenceData.snapshot). */
export type GroupSymbols = (groupId: number, name: string) => GroupSymbol | null

function groupSymbol(
  info: SymbolInfo,
  securities: Map<string, SecurityRow>,
  overrides: Map<string, OverrideRow>,
): GroupSymbol | null {
  const sec = securities.get(info.secGroup)
  if (!sec) return null
  const ov = overrides.get(info.symbol)
  return {
    info,
    sec,
    spread: ov?.spread ?? info.spread,
    spreadBalance: ov?.spreadBalance ?? info.spreadBalance,
    marginDivider: ov?.marginDivider ?? info.marginDivider,
  }
}

const VERSION_KEY = 'ref:v1:version'
const CHECK_MS = 1000
/** What a copy loaded while the version could not be read holds: any version read later differs. */
const UNKNOWN = ''
/** While the shared version cannot be read, the copy is reloaded this often. */
const UNKNOWN_RELOAD_MS = 5000
/**
 * A copy is reloaded at least this often even when the version did not change (a bump lost with the
 * writer): a select of the symbols table and, on each group's next use, its two small selects (the
 * demo's 34 symbols and a group: ~1 ms on a libSQL file, 3-8 ms on sqld), once per instance per 30 s.
 */
const MAX_AGE_MS = 30_000

/**
 * Symbols, group securities and overrides held in memory (they change rarely and every tick and trade
 * reads them). Writers put a new version in the shared cache (never a repeated one: shared-version.ts);
 * every instance reloads when it sees one it does not hold (checked at most once a second), so edits
 * reach all instances within a second. A bump Redis did not take is sent again until it is (within a
 * second of Redis answering again); an instance that cannot read the version reloads every 5 s; and every
 * copy is reloaded at least every 30 s whatever the version says.
 */
export class ReferenceData {
  private symbolMap = new Map<string, SymbolInfo>()
  /** Each group's securities and overrides, read together; a reload starts a new map. */
  private groups = new Map<number, GroupSettings>()
  /** The version the copy was loaded at; null: load at the next check; UNKNOWN: loaded while unreadable. */
  private version: string | null = null
  private checkedAt = 0
  private loadedAt = 0
  /**
   * Counted up by changed(): a reload started before a change may have read the rows before its commit,
   * so it keeps neither its rows nor its version (it would put back the version changed() cleared, and
   * the writer kept the old settings until its next check).
   */
  private generation = 0
  private readonly reload: SingleFlight
  private readonly shared: SharedVersion

  /** `edge`: each request checks and loads on its own (kernel/single-flight). */
  constructor(
    private readonly db: Db,
    store: KeyValueStore,
    private readonly clock: Clock,
    edge = false,
  ) {
    this.reload = new SingleFlight(!edge)
    this.shared = new SharedVersion(store, VERSION_KEY, edge)
  }

  private async load(): Promise<Map<string, SymbolInfo>> {
    const rows = await this.db.select().from(symbols)
    const next = new Map<string, SymbolInfo>()
    for (const r of rows) next.set(r.symbol, { ...r, sessionList: JSON.parse(r.sessions) as DaySessions[] })
    return next
  }

  /**
   * Makes sure the in-memory copy is current; cheap when it is. A check that a change overtook (changed()
   * ran meanwhile, or this caller joined a reload started before it) leaves the version cleared and runs
   * again, so a caller after changed() never gets rows read before it (three rounds at most: a change
   * during each is not a real load; the caller then keeps the copy as it is, reloaded at its next call).
   */
  async fresh(): Promise<void> {
    for (let round = 0; round < 3; round++) {
      const now = this.clock.now()
      if (this.version !== null && now - this.checkedAt >= 0 && now - this.checkedAt < CHECK_MS) return
      await this.reload.run(() => this.check(now))
    }
  }

  private async check(now: number) {
    const generation = this.generation
    const v = await this.shared.read()
    if (generation === this.generation) this.checkedAt = now
    const age = now - this.loadedAt
    const due =
      this.version === null ||
      age < 0 ||
      age >= MAX_AGE_MS ||
      (v === null ? age >= UNKNOWN_RELOAD_MS : v !== this.version)
    const next = due ? await this.load() : null
    if (next && generation === this.generation) {
      this.symbolMap = next
      this.groups = new Map()
      this.version = v ?? UNKNOWN
      this.loadedAt = now
    }
  }

  /**
   * Called after a reference-data write commits: this instance reloads at its next use (a reload already
   * under way keeps nothing, see `generation`), the others within a second.
   */
  async changed() {
    this.generation++
    this.version = null
    await this.shared.bump()
  }

  symbol(name: string): SymbolInfo | undefined {
    return this.symbolMap.get(name)
  }

  all(): SymbolInfo[] {
    return [...this.symbolMap.values()].sort((a, b) => a.symbol.localeCompare(b.symbol))
  }

  /**
   * A group's settings, loaded on its first use. Both parts are read before either is kept: a lookup
   * meanwhile would otherwise find the securities without the overrides and price at the symbol's own
   * spread and margin divider. Rows read across a reload go to the map it replaced, not the new one.
   */
  private async settings(groupId: number): Promise<GroupSettings> {
    const known = this.groups.get(groupId)
    if (known) return known
    const into = this.groups
    const [secs, ov] = await Promise.all([
      this.db.select().from(groupSecurities).where(eq(groupSecurities.groupId, groupId)),
      this.db.select().from(groupSymbols).where(eq(groupSymbols.groupId, groupId)),
    ])
    const loaded: GroupSettings = [
      new Map(secs.map((r) => [r.secGroup, r])),
      new Map(ov.map((r) => [r.symbol, r])),
    ]
    into.set(groupId, loaded)
    return loaded
  }

  /** The symbol as the group sees it, or null when the group has no settings for its security group. */
  async forGroup(groupId: number, name: string): Promise<GroupSymbol | null> {
    await this.fresh()
    const info = this.symbolMap.get(name)
    if (!info) return null
    const [secs, overrides] = await this.settings(groupId)
    return groupSymbol(info, secs, overrides)
  }

  /**
   * `forGroup` for loops that look up many symbols (the margin checks of a batch of opens): the data is
   * checked fresh and the groups' settings loaded once, then every lookup answers without awaiting. Each
   * awaited lookup cost a promise and a suspended frame, a few hundred bytes of garbage per order.
   */
  async snapshot(groupIds: Iterable<number>): Promise<GroupSymbols> {
    await this.fresh()
    const symbolMap = this.symbolMap
    const groups = new Map<number, GroupSettings>()
    for (const id of groupIds) if (!groups.has(id)) groups.set(id, await this.settings(id))
    return (groupId, name) => {
      const info = symbolMap.get(name)
      const g = groups.get(groupId)
      return info && g ? groupSymbol(info, g[0], g[1]) : null
    }
  }

  /** Every symbol the group may see (security group shown), with overrides applied. */
  async visible(groupId: number): Promise<GroupSymbol[]> {
    await this.fresh()
    const out: GroupSymbol[] = []
    for (const s of this.all()) {
      const g = await this.forGroup(groupId, s.symbol)
      if (g && g.sec.show === 1) out.push(g)
    }
    return out
  }
}
