import { and, eq, gt, inArray, isNotNull, isNull, lte, or } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import { kycDocuments, kycSteps } from '../schema'
import { recompute, scoped, settingsOf } from './shared'

/**
 * Documents past their validity date expire; a step approved on them expires with them when fewer than
 * its minimum remain valid, and the customer is asked again (profile `expired`).
 */
export async function expireDocuments({ ctx }: UseCase<KycCtx>) {
  const now = ctx.clock.now()
  const due = await ctx.db
    .select()
    .from(kycDocuments)
    .where(
      and(
        inArray(kycDocuments.status, ['pending', 'approved']),
        isNotNull(kycDocuments.validUntil),
        lte(kycDocuments.validUntil, now),
      ),
    )
    .limit(500)
  for (const d of due) {
    const s = await settingsOf(ctx, d.brandId)
    const def = s.steps.find((x) => x.code === d.stepCode)
    await ctx.uow.run(async (tx, work) => {
      const [r] = await tx
        .update(kycDocuments)
        .set({ status: 'expired' })
        .where(and(eq(kycDocuments.id, d.id), inArray(kycDocuments.status, ['pending', 'approved'])))
        .returning()
      if (!r) return
      const valid = await tx
        .select({ id: kycDocuments.id })
        .from(kycDocuments)
        .where(
          and(
            scoped(d.brandId, d.customerId).docs,
            eq(kycDocuments.stepCode, d.stepCode),
            eq(kycDocuments.status, 'approved'),
            // a document without a validity date never expires (SQL: NULL > now is never true)
            or(isNull(kycDocuments.validUntil), gt(kycDocuments.validUntil, now)),
          ),
        )
      if (valid.length < (def?.documents?.min ?? 1))
        await tx
          .update(kycSteps)
          .set({ status: 'expired', rejectionReason: 'the document has expired', updatedAt: now })
          .where(
            and(
              scoped(d.brandId, d.customerId).steps,
              eq(kycSteps.code, d.stepCode),
              eq(kycSteps.status, 'approved'),
            ),
          )
      await recompute(tx, work, d.brandId, d.customerId, s, now)
    })
  }
  return due.length
}
