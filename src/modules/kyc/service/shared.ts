import { and, asc, type Column, eq, inArray, ne, type SQL, sql } from 'drizzle-orm'
import type { Queryable, Tx } from '../../../kernel/db/client'
import type { Work } from '../../../kernel/db/unit-of-work'
import type { KycCtx } from '../context'
import { DEFAULT_SETTINGS, type KycSettings, readStoredSettings } from '../domain/settings'
import {
  approvedAll,
  type DocumentStatus,
  type ProfileStatus,
  profileStatus,
  type RiskLevel,
  type StepStatus,
} from '../domain/status'
import { refuse } from '../errors'
import { KycApproved, KycRejected, KycSubmitted } from '../events'
import { kycDocuments, kycProfiles, kycSettings, kycSteps } from '../schema'

export const DAY_MS = 86_400_000

/** Whose profile a use case acts on: the brand's customer (the session's own, or the one a staff path names). */
export interface CustomerScope {
  brandId: number
  customerId: number
}

/** Who decides: the staff member of the brand. */
export interface StaffScope {
  brandId: number
  staffId: number
}

export const stepNotFound = (code: string) => refuse('KYC_STEP_NOT_FOUND', `no KYC step ${code}`)

export const profileNotFound = () => refuse('KYC_PROFILE_NOT_FOUND', 'KYC profile not found')

export const conflict = (message: string) => refuse('KYC_STATE_CONFLICT', message)

type StepRow = typeof kycSteps.$inferSelect

type DocumentRow = typeof kycDocuments.$inferSelect

type ProfileRow = typeof kycProfiles.$inferSelect

/** The brand's settings as `q` sees them (the defaults when it saved none); null when what is stored is invalid. */
async function storedSettings(q: Queryable, brandId: number): Promise<KycSettings | null> {
  const [row] = await q.select().from(kycSettings).where(eq(kycSettings.brandId, brandId))
  if (!row) return DEFAULT_SETTINGS
  const parsed = readStoredSettings(JSON.parse(row.settings))
  return parsed.success ? parsed.data : null
}

export async function settingsOf(ctx: KycCtx, brandId: number, q: Queryable = ctx.db): Promise<KycSettings> {
  const s = await storedSettings(q, brandId)
  if (s) return s
  ctx.logger.log('error', 'stored KYC settings are invalid; defaults apply', { brand: brandId })
  return DEFAULT_SETTINGS
}

/** The profile and a row per configured step, created on first use (idempotent under races). */
export async function ensureProfile(
  tx: Tx,
  brandId: number,
  customerId: number,
  s: KycSettings,
  now: number,
) {
  await tx
    .insert(kycProfiles)
    .values({ brandId, customerId, createdAt: now, updatedAt: now })
    .onConflictDoNothing()
  await tx
    .insert(kycSteps)
    .values(s.steps.map((st) => ({ brandId, customerId, code: st.code, updatedAt: now })))
    .onConflictDoNothing()
}

export const scoped = (brandId: number, customerId: number) => ({
  steps: and(eq(kycSteps.brandId, brandId), eq(kycSteps.customerId, customerId)),
  docs: and(eq(kycDocuments.brandId, brandId), eq(kycDocuments.customerId, customerId)),
  profile: and(eq(kycProfiles.brandId, brandId), eq(kycProfiles.customerId, customerId)),
})

/**
 * The profile's status its steps give under the brand's settings now: the required steps, one without a
 * row yet (added to the settings since) counting as not started.
 */
export function derivedStatus(s: KycSettings, steps: Pick<StepRow, 'code' | 'status'>[]): ProfileStatus {
  const byCode = new Map(steps.map((x) => [x.code, x.status as StepStatus]))
  return profileStatus(
    s.steps.filter((x) => x.required).map((x) => byCode.get(x.code) ?? ('not_started' as const)),
  )
}

/**
 * Derives the profile's status from its required steps and stores it; emits kyc.submitted, kyc.approved
 * or kyc.rejected when it moves into that state (in the caller's transaction, so once).
 */
export async function recompute(
  tx: Tx,
  work: Work,
  brandId: number,
  customerId: number,
  s: KycSettings,
  now: number,
  rejected?: { step: string; reason: string },
) {
  const q = scoped(brandId, customerId)
  // under the settings this transaction sees: a save that committed after the caller read them (a read
  // racing a save) must not have its status undone here
  const current = (await storedSettings(tx, brandId)) ?? s
  const status = derivedStatus(current, await tx.select().from(kycSteps).where(q.steps))
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

/**
 * `column in (…)` over one JSON array: one statement text for a list of any length (a list of bound values
 * is a new text for every length).
 */
export const inList = (column: Column, values: readonly (number | string)[]): SQL =>
  inArray(column, sql`(select value from json_each(${JSON.stringify(values)}))`)

/**
 * `recompute` for many customers of a brand in a few statements whatever their number (the jobs: a page of
 * customers in one transaction): their steps and profiles read at once, and one conditional UPDATE per
 * (status before, status after) pair, so a profile changed meanwhile keeps its change and emits nothing.
 * `s`: the brand's settings as this transaction sees them. Emits the event of each move that happened.
 * Returns the customers whose status moved and how many events that emitted.
 */
export async function recomputeMany(
  tx: Tx,
  work: Work,
  brandId: number,
  customerIds: readonly number[],
  s: KycSettings,
  now: number,
): Promise<{ moved: number[]; events: number }> {
  if (customerIds.length === 0) return { moved: [], events: 0 }
  const steps = await tx
    .select({ customerId: kycSteps.customerId, code: kycSteps.code, status: kycSteps.status })
    .from(kycSteps)
    .where(and(eq(kycSteps.brandId, brandId), inList(kycSteps.customerId, customerIds)))
  const profiles = await tx
    .select({ customerId: kycProfiles.customerId, status: kycProfiles.status })
    .from(kycProfiles)
    .where(and(eq(kycProfiles.brandId, brandId), inList(kycProfiles.customerId, customerIds)))
  const stepsOf = new Map<number, { code: string; status: string }[]>()
  for (const r of steps) {
    const list = stepsOf.get(r.customerId)
    if (list) list.push(r)
    else stepsOf.set(r.customerId, [r])
  }
  // the customers of each move (status before -> after)
  const moves = new Map<string, { from: string; to: ProfileStatus; ids: number[] }>()
  for (const p of profiles) {
    const to = derivedStatus(s, stepsOf.get(p.customerId) ?? [])
    if (to === p.status) continue
    const key = `${p.status}>${to}`
    const m = moves.get(key)
    if (m) m.ids.push(p.customerId)
    else moves.set(key, { from: p.status, to, ids: [p.customerId] })
  }
  const moved: number[] = []
  let events = 0
  for (const { from, to, ids } of moves.values()) {
    const rows = await tx
      .update(kycProfiles)
      .set({
        status: to,
        updatedAt: now,
        ...(to === 'submitted' ? { submittedAt: now } : {}),
        ...(to === 'approved' || to === 'rejected' ? { reviewedAt: now } : {}),
      })
      .where(
        and(
          eq(kycProfiles.brandId, brandId),
          inList(kycProfiles.customerId, ids),
          eq(kycProfiles.status, from),
        ),
      )
      .returning({ customerId: kycProfiles.customerId, riskLevel: kycProfiles.riskLevel })
    for (const r of rows) {
      moved.push(r.customerId)
      const payload = { customer_id: r.customerId, status: to, risk_level: r.riskLevel }
      if (to === 'submitted') work.emit(KycSubmitted, brandId, payload)
      if (to === 'approved') work.emit(KycApproved, brandId, payload)
      if (to === 'rejected') work.emit(KycRejected, brandId, { ...payload, step: '', reason: '' })
      if (to === 'submitted' || to === 'approved' || to === 'rejected') events++
    }
  }
  return { moved, events }
}

export const time = (ms: number | null) => (ms === null ? null : Math.floor(ms / 1000))

const dateOf = (ms: number | null) =>
  ms === null ? null : new Date(ms - DAY_MS + 1).toISOString().slice(0, 10)

export function documentView(d: DocumentRow, staff: boolean) {
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

export function stepView(
  def: KycSettings['steps'][number],
  row: StepRow,
  docs: DocumentRow[],
  staff: boolean,
) {
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

/**
 * What KYC allows the customer (the cashier asks through the port). A rejected profile (final) takes no
 * new money: its deposit limit is 0 in every currency, whatever steps are approved; withdrawals keep their
 * per-step rule, so a customer the broker turned down can still take their money out.
 */
export function gatesOf(s: KycSettings, steps: StepRow[]) {
  const byCode = new Map(steps.map((x) => [x.code, x.status as StepStatus]))
  const rejected = derivedStatus(s, steps) === 'rejected'
  const unlimited = !rejected && approvedAll(s.tiers.deposit_unlimited_after, byCode)
  const limit = rejected
    ? Object.fromEntries(Object.keys(s.tiers.deposit_limit_unverified).map((c) => [c, 0]))
    : s.tiers.deposit_limit_unverified
  return {
    deposit_limit: unlimited ? null : limit,
    withdrawal_allowed: approvedAll(s.tiers.withdrawal_after, byCode),
    withdrawal_requires: s.tiers.withdrawal_after.filter((c) => byCode.get(c) !== 'approved'),
    deposit_unlimited_requires: s.tiers.deposit_unlimited_after.filter((c) => byCode.get(c) !== 'approved'),
  }
}

export async function load(ctx: KycCtx, brandId: number, customerId: number) {
  const s = await settingsOf(ctx, brandId)
  const now = ctx.clock.now()
  const q = scoped(brandId, customerId)
  let [profile] = await ctx.db.select().from(kycProfiles).where(q.profile)
  let steps = await ctx.db.select().from(kycSteps).where(q.steps)
  // settings changed since the status was stored (a step made optional, added or removed): stored again,
  // with the event a status change emits, so lists, the cashier and affiliates see what the steps give
  if (
    !profile ||
    s.steps.some((d) => !steps.some((r) => r.code === d.code)) ||
    derivedStatus(s, steps) !== profile.status
  ) {
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

export function profileView(
  l: { s: KycSettings; profile: ProfileRow; steps: StepRow[]; docs: DocumentRow[] },
  staff: boolean,
) {
  const stepRows = new Map(l.steps.map((r) => [r.code, r]))
  return {
    customer_id: l.profile.customerId,
    status: l.profile.status as ProfileStatus,
    // the firm's AML rating and its reason are staff's: telling a customer it is rated high (a PEP match,
    // a suspicion) is tipping off
    ...(staff ? { risk_level: l.profile.riskLevel as RiskLevel, risk_comment: l.profile.riskComment } : {}),
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

/**
 * A final rejection stops the customer: nothing more is attached or submitted. Checked on the profile as
 * loaded (before the input's own checks) and again where it is written, conditional on the status, so a
 * rejection decided meanwhile wins.
 */
export function refuseIfRejected(status: string, what: string) {
  if (status === 'rejected') throw conflict(`the KYC profile is rejected (final): ${what}`)
}

export async function stillOpen(tx: Tx, brandId: number, customerId: number, now: number, what: string) {
  const [p] = await tx
    .update(kycProfiles)
    .set({ updatedAt: now })
    .where(and(scoped(brandId, customerId).profile, ne(kycProfiles.status, 'rejected')))
    .returning({ id: kycProfiles.id })
  if (!p) throw conflict(`the KYC profile is rejected (final): ${what}`)
}

export async function existingProfile(ctx: KycCtx, brandId: number, customerId: number) {
  const [p] = await ctx.db.select().from(kycProfiles).where(scoped(brandId, customerId).profile)
  if (!p) throw profileNotFound()
}
