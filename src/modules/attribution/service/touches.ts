import { createHmac } from 'node:crypto'
import { insertRows, LARGE_CHUNKS } from '../../../kernel/db/bulk-insert'
import type { Db, Tx } from '../../../kernel/db/client'
import { PerRequestCommit } from '../../../kernel/db/group-commit'
import type { AttributionCtx } from '../context'
import { isBot } from '../domain/bots'
import { hasValues, type Params } from '../domain/params'
import type { NewTouch, TouchSink } from '../domain/touch'

export type { NewTouch, TouchSink }

const COLUMNS = [
  'brand_id',
  'visitor_id',
  'installation_id',
  'source',
  'affiliate_id',
  'link_id',
  'params',
  'direct',
  'bot',
  'unique_click',
  'suspect',
  'ip_hash',
  'user_agent',
  'landing_path',
  'referrer',
  'country',
  'created_at',
] as const

const row = (t: NewTouch) => [
  t.brandId,
  t.visitorId,
  t.installationId,
  t.source,
  t.affiliateId,
  t.linkId,
  JSON.stringify(t.params),
  hasValues(t.params) ? 0 : 1,
  t.bot ? 1 : 0,
  t.repeat ? 0 : 1,
  t.suspect ? 1 : 0,
  t.ipHash,
  t.userAgent.slice(0, 256),
  t.landingPath.slice(0, 512),
  t.referrer.slice(0, 512),
  t.country ?? '',
  t.createdAt,
]

/** Inserts touches in one statement per chunk; the ids in order. */
export const insertTouches = (tx: Tx, list: NewTouch[]) =>
  insertRows(tx, 'attribution_touches', COLUMNS, list.map(row), LARGE_CHUNKS)

/** The edge: each request writes its touch itself (a Worker keeps nothing between requests). */
export const directTouches = (db: Db): TouchSink => {
  const commit = new PerRequestCommit(db, (tx: Tx, list: NewTouch[]) => insertTouches(tx, list))
  return { submit: (t) => commit.submit(t), flush: async () => {} }
}

/**
 * The server: landing hits hand their touch to a buffer written every FLUSH_MS (or at BATCH rows) in one
 * transaction, so a burst of visits costs a few statements instead of a commit per visit (ADR 0017:
 * the hit answers before its touch is durable; a crash loses at most FLUSH_MS of touches, a database
 * outage holds up to MAX_HELD of them and retries). Registration reads its visitor's touches after a
 * flush.
 */
export class BufferedTouches implements TouchSink {
  static readonly FLUSH_MS = 20
  static readonly BATCH = 2_000
  static readonly MAX_HELD = 100_000
  private held: NewTouch[] = []
  private timer: ReturnType<typeof setTimeout> | null = null
  private writing: Promise<void> | null = null
  dropped = 0

  constructor(
    private readonly db: Db,
    private readonly onError: (e: unknown, held: number) => void,
  ) {}

  async submit(t: NewTouch) {
    if (this.held.length >= BufferedTouches.MAX_HELD) {
      this.dropped++
      return
    }
    this.held.push(t)
    if (this.held.length >= BufferedTouches.BATCH) void this.flush()
    else this.timer ??= setTimeout(() => void this.flush(), BufferedTouches.FLUSH_MS)
  }

  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    while (this.writing) await this.writing
    if (this.held.length === 0) return
    const batch = this.held
    this.held = []
    this.writing = this.db
      .transaction((tx) => insertTouches(tx, batch))
      .then(
        () => {},
        (e) => {
          // kept for the next flush (the database may be away for a while)
          this.held = [...batch, ...this.held].slice(-BufferedTouches.MAX_HELD)
          this.onError(e, this.held.length)
          this.timer ??= setTimeout(() => void this.flush(), 1_000)
        },
      )
      .finally(() => {
        this.writing = null
      })
    await this.writing
  }
}

/**
 * HMAC of the client address under a key derived from the JWT secret: comparable (click dedupe, abuse
 * review), never readable. node:crypto (Bun natively, Workers with nodejs_compat): a landing page hashes
 * on every hit.
 */
export function hashAddress(ctx: AttributionCtx, ip: string) {
  // one visitor's hits come from one address: the hash of recent addresses is kept (a fifth of a hit's CPU)
  let recent = recentHashes.get(ctx.config)
  if (!recent) {
    recent = new Map()
    recentHashes.set(ctx.config, recent)
  }
  let h = recent.get(ip)
  if (h === undefined) {
    h = createHmac('sha256', `attribution-address:${ctx.config.jwt.secret}`)
      .update(`ip:${ip}`)
      .digest('base64url')
      .slice(0, 22)
    if (recent.size >= 10_000) recent.clear()
    recent.set(ip, h)
  }
  return h
}
const recentHashes = new WeakMap<object, Map<string, string>>()

export interface Visit {
  brandId: number
  visitorId: string
  params: Params
  ip: string
  userAgent: string | null
  landingPath: string
  referrer: string
  /** the request's host, to tell a referrer of the brand's own pages */
  host: string
  /** the visitor's country from the edge ('' when unknown) */
  country: string
}

/**
 * The affiliate behind a visit's values: a link code (its affiliate and campaign) before an affiliate
 * code. Unknown or inactive codes attribute nothing; the values are kept as given.
 */
export async function matchCodes(ctx: AttributionCtx, brandId: number, p: Params) {
  const link = p.link ? await ctx.codes.link(brandId, p.link) : null
  if (link) return link
  return p.affiliate ? await ctx.codes.affiliate(brandId, p.affiliate) : null
}

/** Records a page visit or a link click as a touch; `null` when it carries nothing worth recording. */
export async function recordVisit(
  ctx: AttributionCtx,
  v: Visit,
  source: 'page' | 'click',
  match: { affiliateId: number; linkId: number | null } | null,
  flags: { repeat?: boolean; suspect?: boolean } = {},
) {
  if (source === 'page' && !hasValues(v.params) && !fromElsewhere(v.referrer, v.host)) return null
  return ctx.touchWriter.submit({
    brandId: v.brandId,
    visitorId: v.visitorId,
    installationId: null,
    source,
    affiliateId: match?.affiliateId ?? null,
    linkId: match?.linkId ?? null,
    params: v.params,
    bot: isBot(v.userAgent),
    ...flags,
    ipHash: hashAddress(ctx, v.ip),
    userAgent: v.userAgent ?? '',
    landingPath: v.landingPath,
    referrer: v.referrer,
    country: v.country,
    createdAt: ctx.clock.now(),
  })
}

/** A referrer from another host (a search engine, a partner's site); the brand's own pages are navigation. */
function fromElsewhere(referrer: string, host: string) {
  if (referrer === '') return false
  try {
    return new URL(referrer).hostname.toLowerCase() !== host
  } catch {
    return false
  }
}
