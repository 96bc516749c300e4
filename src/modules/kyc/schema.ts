import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/** One KYC profile per customer; its status is derived from its steps (domain/status.ts) and stored for lists. */
export const kycProfiles = sqliteTable(
  'kyc_profiles',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    customerId: integer('customer_id').notNull(),
    status: text('status').notNull().default('not_started'),
    riskLevel: text('risk_level').notNull().default('unassessed'),
    /** Staff only. */
    riskComment: text('risk_comment').notNull().default(''),
    submittedAt: integer('submitted_at'),
    reviewedAt: integer('reviewed_at'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('kyc_profiles_customer').on(t.brandId, t.customerId),
    index('kyc_profiles_status').on(t.brandId, t.status, t.updatedAt),
    // kyc.recompute: the profiles stored before the brand's settings (none, once it has caught up)
    index('kyc_profiles_updated').on(t.brandId, t.updatedAt),
  ],
)

export const kycSteps = sqliteTable(
  'kyc_steps',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    customerId: integer('customer_id').notNull(),
    code: text('code').notNull(),
    status: text('status').notNull().default('not_started'),
    /** JSON of the answers last submitted. */
    answers: text('answers'),
    /** Shown to the customer. */
    rejectionReason: text('rejection_reason').notNull().default(''),
    /** Staff only, never shown to the customer. */
    staffComment: text('staff_comment').notNull().default(''),
    submittedAt: integer('submitted_at'),
    reviewedAt: integer('reviewed_at'),
    reviewedBy: integer('reviewed_by'),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [uniqueIndex('kyc_steps_customer_code').on(t.brandId, t.customerId, t.code)],
)

export const kycDocuments = sqliteTable(
  'kyc_documents',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    customerId: integer('customer_id').notNull(),
    stepCode: text('step_code').notNull(),
    /** The upload (uploads.uuid), checked to be the customer's own. */
    fileId: text('file_id').notNull(),
    documentType: text('document_type').notNull(),
    status: text('status').notNull().default('pending'),
    /** Epoch ms of the last valid day's end (UTC); null when the document does not expire. */
    validUntil: integer('valid_until'),
    rejectionReason: text('rejection_reason').notNull().default(''),
    staffComment: text('staff_comment').notNull().default(''),
    reviewedAt: integer('reviewed_at'),
    reviewedBy: integer('reviewed_by'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('kyc_documents_file').on(t.brandId, t.fileId),
    index('kyc_documents_customer').on(t.brandId, t.customerId, t.stepCode),
    index('kyc_documents_valid').on(t.status, t.validUntil),
  ],
)

/** A brand's KYC steps and tiers (JSON of domain/settings.ts); absent: the defaults. */
export const kycSettings = sqliteTable('kyc_settings', {
  brandId: integer('brand_id').primaryKey(),
  settings: text('settings').notNull(),
  updatedAt: integer('updated_at').notNull(),
})
