import { and, eq } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import { refuse } from '../errors'
import { kycDocuments } from '../schema'
import type { StaffScope } from './shared'

/**
 * GET /manager/kyc/documents/{id}/file: the file of a document of the brand, for the staff who review it.
 * The document scopes the read (brand in the query, then its customer's own upload); another brand's
 * answers 404 as a missing one. Each opening is logged with who opened which document (identity papers).
 */
export async function documentFile({
  ctx,
  brandId,
  staffId,
  documentId,
}: UseCase<KycCtx, undefined, StaffScope & { documentId: number }>) {
  const [d] = await ctx.db
    .select({ customerId: kycDocuments.customerId, fileId: kycDocuments.fileId })
    .from(kycDocuments)
    .where(and(eq(kycDocuments.id, documentId), eq(kycDocuments.brandId, brandId)))
  if (!d) throw refuse('KYC_DOCUMENT_NOT_FOUND', 'KYC document not found')
  const file = await ctx.uploads.customerFileResponse(ctx.db, brandId, d.customerId, d.fileId)
  if (!file) throw refuse('FILE_NOT_FOUND', 'the file of this document is not stored')
  ctx.logger.log('info', 'kyc document file opened by staff', {
    brand: brandId,
    staff: staffId,
    document: documentId,
    customer: d.customerId,
  })
  return file
}
