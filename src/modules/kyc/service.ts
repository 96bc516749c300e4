import { and, asc, desc, eq, gt, inArray, isNotNull, lt, lte } from 'drizzle-orm'
import type { Tx } from '../../kernel/db/client'
import type { Work } from '../../kernel/db/unit-of-work'
import { ApiError, invalid } from '../../kernel/http/errors'
import type { KycCtx } from './context'
import { checkAnswers, DEFAULT_SETTINGS, KycSettings, parseDate } from './domain/settings'
import {
  approvedAll,
  type DocumentStatus,
  decisionTarget,
  documentTransition,
  type ProfileStatus,
  profileStatus,
  type RiskLevel,
  type StepStatus,
  stepActionFrom,
  stepTransition,
} from './domain/status'
import { KycApproved, KycRejected, KycSubmitted } from './events'
import { kycDocuments, kycProfiles, kycSettings, kycSteps } from './schema'

const DAY_MS = 86_400_000
const stepNotFound = (code: string) => new ApiError(404, 'KYC_STEP_NOT_FOUND', `no KYC step ${code}`)
const profileNotFound = () => new ApiError(404, 'KYC_PROFILE_NOT_FOUND', 'KYC profile not found')
const conflict = (message: string) => new ApiError(409, 'KYC_STATE_CONFLICT', message)

type StepRow = typeof kycSteps.$inferSelect
type DocumentRow = typeof kycDocuments.$inferSelect
type ProfileRow = typeof kycProfiles.$inferSelect

export async function settingsOf(ctx: KycCtx, brandId: number): Promise<KycSettings> {
  const [row] = await ctx.db.select().from(kycSettings).where(eq(kycSettings.brandId, brandId))
  if (!row) return DEFAULT_SETTINGS
  const parsed = KycSettings.safeParse(JSON.parse(row.settings))
  if (parsed.success) return parsed.data
  ctx.logger.log('error', 'stored KYC settings are invalid; defaults apply', { brand: brandId })
  return DEFAULT_SETTINGS
}

export async function saveSettings(ctx: KycCtx, brandId: number, input: unknown) {
  const parsed = KycSettings.safeParse(input)
  if (!parsed.success) {
    const i = parsed.error.issues[0]
    throw invalid(`${i.path.join('.') || 'body'}: ${i.message}`)
  }
  const now = ctx.clock.now()
  const settings = JSON.stringify(parsed.data)
  await ctx.db
    .insert(kycSettings)
    .values({ brandId, settings, updatedAt: now })
    .onConflictDoUpdate({ target: kycSettings.brandId, set: { settings, updatedAt: now } })
  return parsed.data
}

/** The profile and a row per configured step, created on first use (idempotent under races). */
async function ensureProfile(tx: Tx, brandId: number, customerId: number, s: KycSettings, now: number) {
  await tx
    .insert(kycProfiles)
    .values({ brandId, customerId, createdAt: now, updatedAt: now })
    .onConflictDoNothing()
  await tx
    .insert(kycSteps)
    .values(s.steps.map((st) => ({ brandId, customerId, code: st.code, updatedAt: now })))
    .onConflictDoNothing()
}

const scoped = (brandId: number, customerId: number) => ({
  steps: and(eq(kycSteps.brandId, brandId), eq(kycSteps.customerId, customerId)),
  docs: and(eq(kycDocuments.brandId, brandId), eq(kycDocuments.customerId, customerId)),
  profile: and(eq(kycProfiles.brandId, brandId), eq(kycProfiles.customerId, customerId)),
})

/**
 * Derives the profile's status from its required steps and stores it; emits kyc.submitted, kyc.approved
 * or kyc.rejected when it moves into that state (in the caller's transaction, so once).
 */
async function recompute(
  tx: Tx,
  work: Work,
  brandId: number,
  customerId: number,
  s: KycSettings,
  now: number,
  rejected?: { step: string; reason: string },
) {
  const q = scoped(brandId, customerId)
  const steps = await tx.select().from(kycSteps).where(q.steps)
  const required = new Set(s.steps.filter((x) => x.required).map((x) => x.code))
  const status = profileStatus(steps.filter((x) => required.has(x.code)).map((x) => x.status as StepStatus))
  const [before] = await tx.select().from(kycProfiles).where(q.profile)
  if (!before || before.status === status) return status
  await tx
    .update(kycProfiles)
    .set({
      status,
      updatedAt: now,
      ...(status === 'submitted' ? { submittedAt: now } : {}),
      ...(status === 'approved' || status === 'rejected' ? { reviewedAt: now } : {}),
    })
    .where(and(q.profile, eq(kycProfiles.status, before.status)))
  const payload = { customer_id: customerId, status, risk_level: before.riskLevel }
  if (status === 'submitted') work.emit(KycSubmitted, brandId, payload)
  if (status === 'approved') work.emit(KycApproved, brandId, payload)
  if (status === 'rejected')
    work.emit(KycRejected, brandId, {
      ...payload,
      step: rejected?.step ?? '',
      reason: rejected?.reason ?? '',
    })
  return status
}

const time = (ms: number | null) => (ms === null ? null : Math.floor(ms / 1000))
const dateOf = (ms: number | null) =>
  ms === null ? null : new Date(ms - DAY_MS + 1).toISOString().slice(0, 10)

function documentView(d: DocumentRow, staff: boolean) {
  return {
    id: d.id,
    step: d.stepCode,
    file_id: d.fileId,
    document_type: d.documentType,
    status: d.status as DocumentStatus,
    valid_until: dateOf(d.validUntil),
    rejection_reason: d.rejectionReason,
    ...(staff ? { staff_comment: d.staffComment, reviewed_by: d.reviewedBy } : {}),
    reviewed_time: time(d.reviewedAt),
    created_time: Math.floor(d.createdAt / 1000),
  }
}

function stepView(def: KycSettings['steps'][number], row: StepRow, docs: DocumentRow[], staff: boolean) {
  return {
    id: def.code,
    title: def.title,
    required: def.required,
    status: row.status as StepStatus,
    questions: def.questions,
    documents_required: def.documents ?? null,
    answers: row.answers ? (JSON.parse(row.answers) as Record<string, unknown>) : null,
    rejection_reason: row.rejectionReason,
    ...(staff ? { staff_comment: row.staffComment, reviewed_by: row.reviewedBy } : {}),
    submitted_time: time(row.submittedAt),
    reviewed_time: time(row.reviewedAt),
    documents: docs.filter((d) => d.stepCode === def.code).map((d) => documentView(d, staff)),
  }
}

/** What KYC allows the customer (the cashier asks through the port). */
export function gatesOf(s: KycSettings, steps: StepRow[]) {
  const byCode = new Map(steps.map((x) => [x.code, x.status as StepStatus]))
  const unlimited = approvedAll(s.tiers.deposit_unlimited_after, byCode)
  return {
    deposit_limit: unlimited ? null : s.tiers.deposit_limit_unverified,
    withdrawal_allowed: approvedAll(s.tiers.withdrawal_after, byCode),
    withdrawal_requires: s.tiers.withdrawal_after.filter((c) => byCode.get(c) !== 'approved'),
    deposit_unlimited_requires: s.tiers.deposit_unlimited_after.filter((c) => byCode.get(c) !== 'approved'),
  }
}

async function load(ctx: KycCtx, brandId: number, customerId: number) {
  const s = await settingsOf(ctx, brandId)
  const now = ctx.clock.now()
  const q = scoped(brandId, customerId)
  let [profile] = await ctx.db.select().from(kycProfiles).where(q.profile)
  let steps = await ctx.db.select().from(kycSteps).where(q.steps)
  if (!profile || s.steps.some((d) => !steps.some((r) => r.code === d.code))) {
    await ctx.uow.run(async (tx, work) => {
      await ensureProfile(tx, brandId, customerId, s, now)
      await recompute(tx, work, brandId, customerId, s, now)
    })
    ;[profile] = await ctx.db.select().from(kycProfiles).where(q.profile)
    steps = await ctx.db.select().from(kycSteps).where(q.steps)
  }
  const docs = await ctx.db.select().from(kycDocuments).where(q.docs).orderBy(asc(kycDocuments.id))
  return { s, profile, steps, docs }
}

function profileView(
  l: { s: KycSettings; profile: ProfileRow; steps: StepRow[]; docs: DocumentRow[] },
  staff: boolean,
) {
  const stepRows = new Map(l.steps.map((r) => [r.code, r]))
  return {
    customer_id: l.profile.customerId,
    status: l.profile.status as ProfileStatus,
    risk_level: l.profile.riskLevel as RiskLevel,
    ...(staff ? { risk_comment: l.profile.riskComment } : {}),
    submitted_time: time(l.profile.submittedAt),
    reviewed_time: time(l.profile.reviewedAt),
    updated_time: Math.floor(l.profile.updatedAt / 1000),
    steps: l.s.steps.flatMap((d) => {
      const row = stepRows.get(d.code)
      return row ? [stepView(d, row, l.docs, staff)] : []
    }),
    gates: gatesOf(l.s, l.steps),
  }
}

export async function customerProfile(ctx: KycCtx, brandId: number, customerId: number) {
  return profileView(await load(ctx, brandId, customerId), false)
}

export async function customerStep(ctx: KycCtx, brandId: number, customerId: number, code: string) {
  const l = await load(ctx, brandId, customerId)
  const def = l.s.steps.find((d) => d.code === code)
  const row = l.steps.find((r) => r.code === code)
  if (!def || !row) throw stepNotFound(code)
  return stepView(def, row, l.docs, false)
}

export async function customerDocuments(ctx: KycCtx, brandId: number, customerId: number) {
  const rows = await ctx.db
    .select()
    .from(kycDocuments)
    .where(scoped(brandId, customerId).docs)
    .orderBy(desc(kycDocuments.id))
  return { rows: rows.map((d) => documentView(d, false)) }
}

/** Attaches one of the customer's own uploads to a document step (POST /upload first, then its file_id). */
export async function attachDocument(
  ctx: KycCtx,
  brandId: number,
  customerId: number,
  input: { file_id: string; step: string; document_type: string; valid_until?: string },
) {
  const l = await load(ctx, brandId, customerId)
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
  if (!file) throw new ApiError(404, 'FILE_NOT_FOUND', 'file_id: no upload of yours with this id')
  const now = ctx.clock.now()
  const row = await ctx.uow.run(async (tx) => {
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
    return doc
  })
  return { document: documentView(row, false) }
}

/** Submits a step: its answers checked against its questions, its documents counted. */
export async function submitStep(
  ctx: KycCtx,
  brandId: number,
  customerId: number,
  code: string,
  answers: Record<string, unknown>,
) {
  const l = await load(ctx, brandId, customerId)
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
      throw new ApiError(
        400,
        'KYC_DOCUMENTS_MISSING',
        `step ${code} needs ${def.documents.min} document(s) (${def.documents.types.join(', ')}); ${usable} attached`,
      )
  }
  await ctx.uow.run(async (tx, work) => {
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
  return customerStep(ctx, brandId, customerId, code)
}

// ---- staff -------------------------------------------------------------------------------------

export async function listProfiles(
  ctx: KycCtx,
  brandId: number,
  query: { status?: string; cursor?: number; limit?: number },
) {
  const limit = query.limit ?? 50
  const rows = await ctx.db
    .select()
    .from(kycProfiles)
    .where(
      and(
        eq(kycProfiles.brandId, brandId),
        query.status ? eq(kycProfiles.status, query.status) : undefined,
        query.cursor ? lt(kycProfiles.id, query.cursor) : undefined,
      ),
    )
    .orderBy(desc(kycProfiles.id))
    .limit(limit + 1)
  const more = rows.length > limit
  const page = rows.slice(0, limit)
  return {
    rows: page.map((p) => ({
      customer_id: p.customerId,
      status: p.status as ProfileStatus,
      risk_level: p.riskLevel as RiskLevel,
      submitted_time: time(p.submittedAt),
      updated_time: Math.floor(p.updatedAt / 1000),
    })),
    next_cursor: more ? page[page.length - 1].id : null,
  }
}

async function existingProfile(ctx: KycCtx, brandId: number, customerId: number) {
  const [p] = await ctx.db.select().from(kycProfiles).where(scoped(brandId, customerId).profile)
  if (!p) throw profileNotFound()
}

export async function staffProfile(ctx: KycCtx, brandId: number, customerId: number) {
  await existingProfile(ctx, brandId, customerId)
  return profileView(await load(ctx, brandId, customerId), true)
}

/** Staff decide a step: review, approve, reject (final, with a reason the customer sees) or ask again. */
export async function decideStep(
  ctx: KycCtx,
  brandId: number,
  staffId: number,
  customerId: number,
  code: string,
  input: { decision: 'review' | 'approve' | 'reject' | 'resubmit'; reason?: string; comment?: string },
) {
  await existingProfile(ctx, brandId, customerId)
  const s = await settingsOf(ctx, brandId)
  if (!s.steps.some((d) => d.code === code)) throw stepNotFound(code)
  if ((input.decision === 'reject' || input.decision === 'resubmit') && !input.reason?.trim())
    throw invalid('reason: required to reject or ask for resubmission (the customer sees it)')
  const now = ctx.clock.now()
  const action = input.decision
  await ctx.uow.run(async (tx, work) => {
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
  return staffProfile(ctx, brandId, customerId)
}

export async function decideDocument(
  ctx: KycCtx,
  brandId: number,
  staffId: number,
  documentId: number,
  input: { decision: 'approve' | 'reject'; reason?: string; comment?: string },
) {
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
    if (!cur) throw new ApiError(404, 'KYC_DOCUMENT_NOT_FOUND', 'KYC document not found')
    throw conflict(`the document is ${cur.status}: only a pending document is decided`)
  }
  return { document: documentView(r, true) }
}

export async function setRisk(
  ctx: KycCtx,
  brandId: number,
  customerId: number,
  input: { risk_level: RiskLevel; comment?: string },
) {
  const [r] = await ctx.db
    .update(kycProfiles)
    .set({
      riskLevel: input.risk_level,
      ...(input.comment !== undefined ? { riskComment: input.comment } : {}),
      updatedAt: ctx.clock.now(),
    })
    .where(scoped(brandId, customerId).profile)
    .returning()
  if (!r) throw profileNotFound()
  return staffProfile(ctx, brandId, customerId)
}

/**
 * Documents past their validity date expire; a step approved on them expires with them when fewer than
 * its minimum remain valid, and the customer is asked again (profile `expired`).
 */
export async function expireDocuments(ctx: KycCtx) {
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
            gt(kycDocuments.validUntil, now),
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

/** The KYC gates of a customer (the cashier's deposit limit and withdrawal check). */
export async function gatesFor(ctx: KycCtx, brandId: number, customerId: number) {
  const s = await settingsOf(ctx, brandId)
  const steps = await ctx.db.select().from(kycSteps).where(scoped(brandId, customerId).steps)
  const [p] = await ctx.db
    .select({ status: kycProfiles.status })
    .from(kycProfiles)
    .where(scoped(brandId, customerId).profile)
  return { status: (p?.status ?? 'not_started') as ProfileStatus, ...gatesOf(s, steps) }
}
