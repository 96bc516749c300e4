import { sql } from 'drizzle-orm'
import type { AffiliateCtx } from '../context'
import { affiliates, conversions, postbacks } from '../schema'
import { conversionView } from '../views'
import { trackingOfCustomers } from './referral'

type Row = typeof conversions.$inferSelect

/**
 * Release 1.25.244 (spec 4.17 rule 4): a first_deposit row holds the earliest credited deposit of its
 * customer. The migration `0015_first_deposit_earliest_1_25_244.sql` corrected the rows written before it
 * in place, without a postback and without moving `updated_at`; this repair (job
 * `affiliate.first-deposit-repair`, at start and hourly) finishes the job where it is owed:
 * - a first_deposit row that still names another deposit than the earliest (a database the migration did
 *   not see, or written since by older code) is corrected;
 * - a row whose last postback named another deposit (corrected silently) is posted again;
 * each such row gets `updated_at` now and one postback to its affiliate's endpoint, with the customer's
 * tracking values as every postback (ledger.ts). Idempotent: a row corrected and posted matches on the next
 * run.
 */
export async function repairFirstDeposits(ctx: AffiliateCtx) {
  const now = ctx.clock.now()
  return ctx.db.transaction(async (tx) => {
    const corrected = (await tx.all(sql`
      UPDATE affiliate_conversions
      SET value_minor = e.value_minor, currency = e.currency, reference_id = e.reference_id,
          event_time = e.event_time, event_id = e.event_id, updated_at = ${now}
      FROM (
        SELECT customer_id, value_minor, currency, reference_id, event_time, event_id,
               row_number() OVER (PARTITION BY customer_id ORDER BY event_time, event_id) AS n
        FROM affiliate_conversions WHERE kind = 'deposit'
      ) AS e
      WHERE affiliate_conversions.kind = 'first_deposit' AND e.customer_id = affiliate_conversions.customer_id
        AND e.n = 1
        AND (affiliate_conversions.reference_id IS NOT e.reference_id
          OR affiliate_conversions.value_minor IS NOT e.value_minor
          OR affiliate_conversions.currency IS NOT e.currency
          OR affiliate_conversions.event_time IS NOT e.event_time)
      RETURNING affiliate_conversions.id`)) as { id: number }[]
    const unposted = (await tx.all(sql`
      UPDATE affiliate_conversions SET updated_at = ${now}
      WHERE kind = 'first_deposit'
        AND reference_id IS NOT (
          SELECT json_extract(p.body, '$.conversion.reference_id') FROM affiliate_postbacks p
          WHERE p.conversion_id = affiliate_conversions.id ORDER BY p.id DESC LIMIT 1)
        AND EXISTS (SELECT 1 FROM affiliate_postbacks p WHERE p.conversion_id = affiliate_conversions.id)
      RETURNING id`)) as { id: number }[]
    const ids = [...new Set([...corrected, ...unposted].map((r) => Number(r.id)))]
    if (ids.length === 0) return 0
    const rows = (await tx
      .select({ row: conversions, url: affiliates.postbackUrl })
      .from(conversions)
      .innerJoin(affiliates, sql`${affiliates.id} = ${conversions.affiliateId}`)
      .where(sql`${conversions.id} in ${ids}`)) as { row: Row; url: string }[]
    // held for a disabled endpoint as a new conversion's are (ledger.ts)
    const owed = rows.filter((r) => r.url)
    // with the tracking values every postback carries (ledger.ts), so the tracker matches it by click_id
    const tracking = await trackingOfCustomers(
      ctx,
      owed.map((r) => r.row),
    )
    if (owed.length > 0)
      await tx.insert(postbacks).values(
        owed.map(({ row }) => ({
          brandId: row.brandId,
          affiliateId: row.affiliateId,
          conversionId: row.id,
          body: JSON.stringify({
            type: 'conversion',
            conversion: { ...conversionView(row), tracking: tracking.get(row.customerId) ?? {} },
          }),
          nextAt: now,
          createdAt: now,
        })),
      )
    ctx.logger.log('info', 'first deposits repaired (release 1.25.244)', {
      corrected: corrected.length,
      reposted: unposted.length,
      postbacks: owed.length,
    })
    return ids.length
  })
}
