import { sql } from 'drizzle-orm'
import type { AffiliateCtx } from '../context'
import { reconcileCommissions } from './commission-ledger'

/**
 * Corrections written before the ledger kept currencies apart (migration 0033): a key whose currency
 * changed after a close got one row of the new currency holding the new amount less the old currency's
 * (a EUR row of 18,000 - 20,000 against a closed USD 20,000). Such a row names a period that holds nothing
 * of its key in its currency, and is the latest of them. Its customer's rows are derived again, which
 * takes back the old currency in its own currency and pays the new one (job
 * `affiliate.correction-repair`, at start and hourly, one instance). Idempotent: a repaired key has a
 * later row of its own, or none wrong.
 */
export async function repairMixedCorrections(ctx: AffiliateCtx) {
  const owed = (await ctx.db.all(sql`
    SELECT DISTINCT c.brand_id AS brand, c.affiliate_id AS affiliate, c.customer_id AS customer
    FROM affiliate_commissions c
    WHERE c.customer_id > 0 AND c.corrects != ''
      AND NOT EXISTS (SELECT 1 FROM affiliate_commissions o
        WHERE o.brand_id = c.brand_id AND o.affiliate_id = c.affiliate_id AND o.key = c.key
          AND o.currency = c.currency AND o.period = c.corrects)
      AND NOT EXISTS (SELECT 1 FROM affiliate_commissions l
        WHERE l.brand_id = c.brand_id AND l.affiliate_id = c.affiliate_id AND l.key = c.key
          AND l.currency = c.currency AND l.period > c.period)
    LIMIT 500`)) as { brand: number; affiliate: number; customer: number }[]
  for (const o of owed)
    await ctx.db.transaction((tx) =>
      reconcileCommissions(ctx, tx, {
        brandId: Number(o.brand),
        customerId: Number(o.customer),
        affiliateId: Number(o.affiliate),
        linkId: null,
        tracking: {},
      }),
    )
  if (owed.length > 0) ctx.logger.log('info', 'commission corrections repaired', { customers: owed.length })
  return owed.length
}
