import { and, eq, inArray } from 'drizzle-orm'
import { invalid } from '../../../kernel/http/errors'
import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import { checkAnswers } from '../domain/settings'
import { stepActionFrom } from '../domain/status'
import { refuse } from '../errors'
import { kycSteps } from '../schema'
import { customerStep } from './customer-read'
import {
  type CustomerScope,
  conflict,
  load,
  recompute,
  refuseIfRejected,
  scoped,
  stepNotFound,
  stillOpen,
} from './shared'

/** Submits a step: its answers checked against its questions, its documents counted. */
export async function submitStep({
  ctx,
  brandId,
  customerId,
  code,
  input,
}: UseCase<KycCtx, { answers?: Record<string, unknown> }, CustomerScope & { code: string }>) {
  const answers = input.answers ?? {}
  const l = await load(ctx, brandId, customerId)
  const NO_MORE = 'no step can be submitted'
  refuseIfRejected(l.profile.status, NO_MORE)
  const def = l.s.steps.find((d) => d.code === code)
  if (!def) throw stepNotFound(code)
  const now = ctx.clock.now()
  const checked = checkAnswers(def.questions, answers, now)
  if (!checked.ok) throw invalid(checked.message)
  if (def.documents) {
    const usable = l.docs.filter(
      (d) => d.stepCode === code && (d.status === 'pending' || d.status === 'approved'),
    ).length
    if (usable < def.documents.min)
      throw refuse(
        'KYC_DOCUMENTS_MISSING',
        `step ${code} needs ${def.documents.min} document(s) (${def.documents.types.join(', ')}); ${usable} attached`,
      )
  }
  await ctx.uow.run(async (tx, work) => {
    await stillOpen(tx, brandId, customerId, now, NO_MORE)
    const [r] = await tx
      .update(kycSteps)
      .set({
        status: 'submitted',
        answers: def.questions.length ? JSON.stringify(checked.answers) : null,
        rejectionReason: '',
        submittedAt: now,
        updatedAt: now,
      })
      .where(
        and(
          scoped(brandId, customerId).steps,
          eq(kycSteps.code, code),
          inArray(kycSteps.status, [...stepActionFrom('submit')]),
        ),
      )
      .returning()
    if (!r) {
      const cur = l.steps.find((x) => x.code === code)?.status
      throw conflict(`step ${code} is ${cur}: it cannot be submitted now`)
    }
    await recompute(tx, work, brandId, customerId, l.s, now)
  })
  return customerStep({ ctx, brandId, customerId, code })
}

// ---- staff -------------------------------------------------------------------------------------
