import { and, eq } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import type { AffiliateCtx } from '../context'
import { deriveConversions, type Fact, mayCorrect, rowChanged } from '../domain/conversions'
import { affiliateSettings, affiliates, conversionFacts, conversions, postbacks } from '../schema'
import { conversionView } from '../views'
import { reconcileFact, rememberCustomer } from './commission-ledger'
import type { Referral } from './referral'

async function rulesOf(tx: Tx, brandId: number) {
  const [s] = await tx
    .select({ lots: affiliateSettings.activeTraderLots })
    .from(affiliateSettings)
    .where(eq(affiliateSettings.brandId, brandId))
  return { activeTraderCentilots: s?.lots ?? 0 }
}

/**
 * Records one fact of a referred customer, brings its conversion rows to what the facts derive
 * (domain/conversions.ts) and its commission rows to what its facts and plans derive (commission-ledger.ts).
 * New conversion rows are inserted, a row an earlier fact corrects is updated (the active trader row only
 * by a late trade before it, never by a threshold changed since: `mayCorrect`), and each of those gets a
 * postback when the affiliate has an endpoint. Runs in the delivery's transaction, so a redelivered event
 * (its unique fact) changes nothing.
 */
export async function recordFact(ctx: AffiliateCtx, tx: Tx, ref: Referral, fact: Fact) {
  const inserted = await tx
    .insert(conversionFacts)
    .values({ brandId: ref.brandId, customerId: ref.customerId, ...fact })
    .onConflictDoNothing()
    .returning({ id: conversionFacts.id })
  if (inserted.length === 0) return
  await rememberCustomer(ctx, tx, ref)
  // bonuses and withdrawals make no conversion; a trade after the customer became an active trader none
  const converts =
    fact.kind !== 'bonus' &&
    fact.kind !== 'withdrawal' &&
    !(fact.kind === 'trade' && (await activeBefore(tx, ref.customerId, fact.eventTime)))
  if (converts) await recompute(ctx, tx, ref, fact)
  await reconcileFact(ctx, tx, ref, fact)
}

/** An active-trader row already dated at or before `time`: a later trade cannot change anything. */
async function activeBefore(tx: Tx, customerId: number, time: number) {
  const [row] = await tx
    .select({ at: conversions.eventTime })
    .from(conversions)
    .where(and(eq(conversions.customerId, customerId), eq(conversions.key, 'active_trader')))
  return row !== undefined && row.at <= time
}

async function recompute(ctx: AffiliateCtx, tx: Tx, ref: Referral, fact: Fact) {
  const facts = await tx.select().from(conversionFacts).where(eq(conversionFacts.customerId, ref.customerId))
  const derived = deriveConversions(facts as Fact[], await rulesOf(tx, ref.brandId))
  const stored = new Map(
    (await tx.select().from(conversions).where(eq(conversions.customerId, ref.customerId))).map((r) => [
      r.key,
      r,
    ]),
  )
  const now = ctx.clock.now()
  const touched: (typeof conversions.$inferSelect)[] = []
  for (const row of derived) {
    const have = stored.get(row.key)
    if (!have) {
      const [r] = await tx
        .insert(conversions)
        .values({
          brandId: ref.brandId,
          affiliateId: ref.affiliateId,
          linkId: ref.linkId,
          customerId: ref.customerId,
          ...row,
          createdAt: now,
          updatedAt: now,
        })
        .returning()
      touched.push(r)
    } else if (rowChanged(have, row) && mayCorrect(have, row, fact)) {
      const [r] = await tx
        .update(conversions)
        .set({ ...row, updatedAt: now })
        .where(eq(conversions.id, have.id))
        .returning()
      touched.push(r)
    }
  }
  if (touched.length > 0) await queuePostbacks(tx, ref, touched, now)
}

/**
 * A postback per changed row, for an affiliate with an endpoint. One whose endpoint is disabled gets its
 * postbacks too: they wait (the sender skips a disabled endpoint) and go out once it is enabled again,
 * so no conversion made meanwhile is lost to the affiliate's tracker.
 */
async function queuePostbacks(tx: Tx, ref: Referral, rows: (typeof conversions.$inferSelect)[], now: number) {
  const [aff] = await tx
    .select({ url: affiliates.postbackUrl })
    .from(affiliates)
    .where(eq(affiliates.id, ref.affiliateId))
  if (!aff?.url) return
  await tx.insert(postbacks).values(
    rows.map((row) => ({
      brandId: ref.brandId,
      affiliateId: ref.affiliateId,
      conversionId: row.id,
      body: JSON.stringify({
        type: 'conversion',
        conversion: { ...conversionView(row), tracking: ref.tracking },
      }),
      nextAt: now,
      createdAt: now,
    })),
  )
}
