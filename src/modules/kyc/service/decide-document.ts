import { and, eq } from 'drizzle-orm'
import { invalid } from '../../../kernel/http/errors'
import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import { documentTransition } from '../domain/status'
import { refuse } from '../errors'
import { kycDocuments } from '../schema'
import { conflict, documentView, type StaffScope } from './shared'

export async function decideDocument({
  ctx,
  brandId,
  staffId,
  documentId,
  input,
}: UseCase<
  KycCtx,
  { decision: 'approve' | 'reject'; reason?: string; comment?: string },
  StaffScope & { documentId: number }
>) {
  if (input.decision === 'reject' && !input.reason?.trim())
    throw invalid('reason: required to reject a document (the customer sees it)')
  const now = ctx.clock.now()
  const [r] = await ctx.db
    .update(kycDocuments)
    .set({
      status: documentTransition('pending', input.decision)!,
      rejectionReason: input.decision === 'reject' ? input.reason!.trim() : '',
      ...(input.comment !== undefined ? { staffComment: input.comment } : {}),
      reviewedAt: now,
      reviewedBy: staffId,
    })
    .where(
      and(
        eq(kycDocuments.id, documentId),
        eq(kycDocuments.brandId, brandId),
        eq(kycDocuments.status, 'pending'),
      ),
    )
    .returning()
  if (!r) {
    const [cur] = await ctx.db
      .select({ status: kycDocuments.status })
      .from(kycDocuments)
      .where(and(eq(kycDocuments.id, documentId), eq(kycDocuments.brandId, brandId)))
    if (!cur) throw refuse('KYC_DOCUMENT_NOT_FOUND', 'KYC document not found')
    throw conflict(`the document is ${cur.status}: only a pending document is decided`)
  }
  return { document: documentView(r, true) }
}
