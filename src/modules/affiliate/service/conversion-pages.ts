import { and, desc, eq, gte, inArray, lt } from 'drizzle-orm'
import { olderThan } from '../../../kernel/db/keyset'
import type { AffiliateCtx } from '../context'
import { type CursorPosition, pageOf } from '../domain/cursor'
import { conversions } from '../schema'

interface ConversionFilter {
  brandId: number
  affiliateId: number
  from: number | null
  to: number | null
  kinds?: string[]
  customerId?: number
}

/** An affiliate's conversion rows of a brand, in [from, to) and of the given kinds (all when absent). */
export const conversionsOf = (f: ConversionFilter) =>
  and(
    eq(conversions.brandId, f.brandId),
    eq(conversions.affiliateId, f.affiliateId),
    f.from !== null ? gte(conversions.eventTime, f.from) : undefined,
    f.to !== null ? lt(conversions.eventTime, f.to) : undefined,
    f.kinds?.length === 1
      ? eq(conversions.kind, f.kinds[0])
      : f.kinds
        ? inArray(conversions.kind, f.kinds)
        : undefined,
    f.customerId ? eq(conversions.customerId, f.customerId) : undefined,
  )

/**
 * One page of them, newest first by (event time, id) below the cursor: an index range
 * (affiliate_conversions_aff, or _kind for one kind) wherever the cursor points, never an OFFSET.
 */
export async function conversionPage(
  ctx: AffiliateCtx,
  f: ConversionFilter,
  cursor: CursorPosition | null,
  size: number,
) {
  const rows = await ctx.db
    .select()
    .from(conversions)
    .where(and(conversionsOf(f), olderThan(conversions.eventTime, conversions.id, cursor)))
    .orderBy(desc(conversions.eventTime), desc(conversions.id))
    .limit(size + 1)
  return pageOf(rows, size)
}
