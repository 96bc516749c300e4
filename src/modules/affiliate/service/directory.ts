import { and, eq, sql } from 'drizzle-orm'
import { JsonCache } from '../../../kernel/cache/json-cache'
import type { AffiliateCtx } from '../context'
import { mailboxOf } from '../domain/mailbox'
import type { CodeMatch } from '../ports'
import { affiliateAccess, affiliates, trackingLinks } from '../schema'

const NONE = { none: true } as const
const TTL_MS = 10_000
const LOCAL_MS = 1_000

/**
 * Codes of the brand's active affiliates (active access to the brand) and active links, read through the
 * shared cache: a landing page hit must not cost a database read, and a code is an attribution value,
 * not a credential, so a suspension reaching touches within TTL_MS is enough (it reaches conversions and
 * the cabinet at once: they read the tables).
 */
export class AffiliateDirectory {
  private readonly cache: JsonCache
  private readonly affStmt
  private readonly linkStmt

  constructor(private readonly ctx: AffiliateCtx) {
    this.cache = new JsonCache(ctx.store, TTL_MS)
    const active = and(
      eq(affiliates.status, 'active'),
      eq(affiliateAccess.status, 'active'),
      eq(affiliateAccess.brandId, sql.placeholder('brand')),
    )
    this.affStmt = ctx.db
      .select({ id: affiliates.id, code: affiliates.code })
      .from(affiliates)
      .innerJoin(affiliateAccess, eq(affiliateAccess.affiliateId, affiliates.id))
      // a code is one in any case (unique so, and the cabinet signs in by it so): a link typed in capitals
      // still attributes (affiliates_code_nocase)
      // every code equal in any case: made before codes were unique in any case, two may differ by case only
      .where(and(sql`lower(${affiliates.code}) = lower(${sql.placeholder('code')})`, active))
      .orderBy(affiliates.id)
      .prepare()
    this.linkStmt = ctx.db
      .select({
        id: trackingLinks.id,
        affiliateId: trackingLinks.affiliateId,
        landingPath: trackingLinks.landingPath,
        campaign: trackingLinks.campaign,
      })
      .from(trackingLinks)
      .innerJoin(affiliates, eq(affiliates.id, trackingLinks.affiliateId))
      .innerJoin(affiliateAccess, eq(affiliateAccess.affiliateId, affiliates.id))
      .where(
        and(
          eq(trackingLinks.brandId, sql.placeholder('brand')),
          eq(trackingLinks.code, sql.placeholder('code')),
          eq(trackingLinks.active, 1),
          active,
        ),
      )
      .prepare()
  }

  /**
   * Each answer is also kept in this process for a second: a burst of hits on one campaign asks the
   * shared cache once a second, not once a hit (a twentieth of a landing hit's CPU).
   */
  private readonly local = new Map<string, { value: unknown; until: number }>()

  private async lookup<T extends object>(
    key: string,
    load: () => Promise<T | typeof NONE>,
  ): Promise<T | null> {
    const now = Date.now()
    const memo = this.local.get(key)
    const hit =
      memo && memo.until > now
        ? (memo.value as T | typeof NONE | null)
        : await this.cache.get<T | typeof NONE>(key, load)
    if (!memo || memo.until <= now) {
      if (this.local.size >= 10_000) this.local.clear()
      this.local.set(key, { value: hit, until: now + LOCAL_MS })
    }
    return hit && !('none' in hit) ? hit : null
  }

  /**
   * An affiliate code matches in any case (codes are one in any case, and the cabinet signs in by them so);
   * cached by the code in lower case, so a change forgets every spelling of it. Of two codes differing only
   * by case (made before that rule) the one spelled exactly wins, else the older.
   */
  async affiliate(brandId: number, code: string): Promise<CodeMatch | null> {
    const found = await this.lookup<{ codes: [string, number][] }>(
      `aff:v2:${brandId}:${code.toLowerCase()}`,
      async () => {
        const rows = await this.affStmt.execute({ brand: brandId, code })
        return rows.length > 0 ? { codes: rows.map((r) => [r.code, r.id] as [string, number]) } : NONE
      },
    )
    if (!found) return null
    const [, id] = found.codes.find(([c]) => c === code) ?? found.codes[0]!
    return { affiliateId: id, linkId: null, landingPath: '/', campaign: '' }
  }

  link(brandId: number, code: string): Promise<CodeMatch | null> {
    return this.lookup<CodeMatch>(`afl:v1:${brandId}:${code}`, async () => {
      const [r] = await this.linkStmt.execute({ brand: brandId, code })
      return r
        ? { affiliateId: r.affiliateId, linkId: r.id, landingPath: r.landingPath, campaign: r.campaign }
        : NONE
    })
  }

  /** Read at registration only (once per customer): no cache. One mailbox is one person (domain/mailbox.ts). */
  async isOwnEmail(affiliateId: number, email: string) {
    const [r] = await this.ctx.db
      .select({ email: affiliates.email })
      .from(affiliates)
      .where(eq(affiliates.id, affiliateId))
    return !!r && mailboxOf(r.email) === mailboxOf(email)
  }

  /** After a change of an affiliate or link (this instance and every one sharing the cache). */
  forget(brandId: number, ...codes: { affiliate?: string; link?: string }[]) {
    const keys = codes.flatMap((c) => [
      ...(c.affiliate ? [`aff:v2:${brandId}:${c.affiliate.toLowerCase()}`] : []),
      ...(c.link ? [`afl:v1:${brandId}:${c.link}`] : []),
    ])
    for (const k of keys) this.local.delete(k)
    return this.cache.del(...keys)
  }
}
