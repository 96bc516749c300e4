import { and, eq } from 'drizzle-orm'
import { invalid } from '../../../kernel/http/errors'
import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import { parseDate } from '../domain/settings'
import { type StepStatus, stepTransition } from '../domain/status'
import { refuse } from '../errors'
import { kycDocuments, kycSteps } from '../schema'
import {
  type CustomerScope,
  conflict,
  DAY_MS,
  documentView,
  load,
  refuseIfRejected,
  scoped,
  stepNotFound,
  stillOpen,
} from './shared'

/** Attaches one of the customer's own uploads to a document step (POST /upload first, then its file_id). */
export async function attachDocument({
  ctx,
  brandId,
  customerId,
  input,
}: UseCase<
  KycCtx,
  { file_id: string; step: string; document_type: string; valid_until?: string },
  CustomerScope
>) {
  const l = await load(ctx, brandId, customerId)
  const NO_MORE = 'documents can no longer be attached'
  refuseIfRejected(l.profile.status, NO_MORE)
  const def = l.s.steps.find((d) => d.code === input.step)
  if (!def) throw stepNotFound(input.step)
  if (!def.documents) throw invalid(`step: ${input.step} takes no documents`)
  if (!def.documents.types.includes(input.document_type))
    throw invalid(`document_type: one of ${def.documents.types.join(', ')} for step ${input.step}`)
  let validUntil: number | null = null
  if (input.valid_until !== undefined) {
    const ms = parseDate(input.valid_until)
    if (ms === null) throw invalid('valid_until: a date as YYYY-MM-DD')
    validUntil = ms + DAY_MS
    if (validUntil <= ctx.clock.now()) throw invalid('valid_until: the document has expired')
  } else if (def.documents.valid_until_required)
    throw invalid(`valid_until: required for ${input.step} documents`)
  const file = await ctx.uploads.customerFile(ctx.db, brandId, customerId, input.file_id)
  // another customer's file answers like a missing one (no existence leak)
  if (!file) throw refuse('FILE_NOT_FOUND', 'file_id: no upload of yours with this id')
  const now = ctx.clock.now()
  const row = await ctx.uow.run(async (tx) => {
    await stillOpen(tx, brandId, customerId, now, NO_MORE)
    const [r] = await tx
      .update(kycSteps)
      .set({ status: 'in_progress', updatedAt: now })
      .where(
        and(
          scoped(brandId, customerId).steps,
          eq(kycSteps.code, input.step),
          eq(kycSteps.status, 'not_started'),
        ),
      )
      .returning()
    const [step] = r
      ? [r]
      : await tx
          .select()
          .from(kycSteps)
          .where(and(scoped(brandId, customerId).steps, eq(kycSteps.code, input.step)))
    if (!step || stepTransition(step.status as StepStatus, 'attach') === null)
      throw conflict(`step ${input.step} is ${step?.status}: documents can no longer be attached`)
    const [doc] = await tx
      .insert(kycDocuments)
      .values({
        brandId,
        customerId,
        stepCode: input.step,
        fileId: input.file_id,
        documentType: input.document_type,
        validUntil,
        createdAt: now,
      })
      .onConflictDoNothing()
      .returning()
    if (!doc) throw conflict('file_id: this file is already attached')
    // the upload is marked used with the document, in its transaction (uploads sweeps files never
    // attached): swept since it was read above, it answers as a missing one and nothing is written
    if (!(await ctx.uploads.attach(tx, brandId, input.file_id)))
      throw refuse('FILE_NOT_FOUND', 'file_id: no upload of yours with this id')
    return doc
  })
  return { document: documentView(row, false) }
}
