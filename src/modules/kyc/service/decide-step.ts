import { and, eq, inArray } from 'drizzle-orm'
import { invalid } from '../../../kernel/http/errors'
import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import { decisionTarget, stepActionFrom } from '../domain/status'
import { refuse } from '../errors'
import { kycDocuments, kycSteps } from '../schema'
import {
  conflict,
  existingProfile,
  recompute,
  type StaffScope,
  scoped,
  settingsOf,
  stepNotFound,
} from './shared'
import { staffProfile } from './staff-profile'

/** Staff decide a step: review, approve, reject (final, with a reason the customer sees) or ask again. */
export async function decideStep({
  ctx,
  brandId,
  staffId,
  customerId,
  code,
  input,
}: UseCase<
  KycCtx,
  { decision: 'review' | 'approve' | 'reject' | 'resubmit'; reason?: string; comment?: string },
  StaffScope & { customerId: number; code: string }
>) {
  await existingProfile(ctx, brandId, customerId)
  const s = await settingsOf(ctx, brandId)
  const def = s.steps.find((d) => d.code === code)
  if (!def) throw stepNotFound(code)
  if ((input.decision === 'reject' || input.decision === 'resubmit') && !input.reason?.trim())
    throw invalid('reason: required to reject or ask for resubmission (the customer sees it)')
  const now = ctx.clock.now()
  const action = input.decision
  await ctx.uow.run(async (tx, work) => {
    // an approval needs what a submission needed: documents not rejected (read in the writing transaction,
    // so a document rejected meanwhile counts as rejected)
    if (action === 'approve' && def.documents) {
      const usable = await tx
        .select({ id: kycDocuments.id })
        .from(kycDocuments)
        .where(
          and(
            scoped(brandId, customerId).docs,
            eq(kycDocuments.stepCode, code),
            inArray(kycDocuments.status, ['pending', 'approved']),
          ),
        )
      if (usable.length < def.documents.min)
        throw refuse(
          'KYC_DOCUMENTS_MISSING',
          `step ${code} needs ${def.documents.min} document(s) not rejected to be approved; ${usable.length} left`,
        )
    }
    const [r] = await tx
      .update(kycSteps)
      .set({
        status: decisionTarget(input.decision),
        rejectionReason: action === 'reject' || action === 'resubmit' ? input.reason!.trim() : '',
        ...(input.comment !== undefined ? { staffComment: input.comment } : {}),
        reviewedAt: now,
        reviewedBy: staffId,
        updatedAt: now,
      })
      .where(
        and(
          scoped(brandId, customerId).steps,
          eq(kycSteps.code, code),
          inArray(kycSteps.status, [...stepActionFrom(action)]),
        ),
      )
      .returning()
    if (!r) throw conflict(`step ${code} cannot be given the decision ${input.decision} in its current state`)
    // approving a step approves its documents still pending
    if (action === 'approve')
      await tx
        .update(kycDocuments)
        .set({ status: 'approved', reviewedAt: now, reviewedBy: staffId })
        .where(
          and(
            scoped(brandId, customerId).docs,
            eq(kycDocuments.stepCode, code),
            eq(kycDocuments.status, 'pending'),
          ),
        )
    await recompute(tx, work, brandId, customerId, s, now, { step: code, reason: input.reason ?? '' })
  })
  return staffProfile({ ctx, brandId, customerId })
}
