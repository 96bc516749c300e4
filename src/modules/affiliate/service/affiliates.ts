import { and, desc, eq, isNull, lt, ne, sql } from 'drizzle-orm'
import { hashPassword } from '../../../kernel/auth/passwords'
import type { Tx } from '../../../kernel/db/client'
import { isUniqueViolation } from '../../../kernel/db/errors'
import type { AffiliateCtx } from '../context'
import { refuse } from '../errors'
import {
  affiliateAccess,
  affiliates,
  affiliateTokens,
  postbackKeys,
  standingChanges,
  trackingLinks,
} from '../schema'
import type { AffiliateDirectory } from './directory'
import { wakeParkedPostbacks } from './postback-queue'
import { checkPostbackUrl } from './settings'

type AffiliateRow = typeof affiliates.$inferSelect

const notFound = () => refuse('AFFILIATE_NOT_FOUND', 'affiliate not found')

/**
 * An affiliate as staff of `brandId` see it. Of an affiliate of another brand (with access to this one)
 * they see what concerns their brand only: its home brand's contact and postback settings stay empty.
 */
function affiliateView(
  a: AffiliateRow,
  access: { status: 'active' | 'revoked' } | null,
  brandId: number,
  keys: string[] = [],
) {
  const home = a.brandId === brandId
  return {
    id: a.id,
    email: home ? a.email : '',
    code: a.code,
    name: a.name,
    status: a.status,
    home_brand_id: a.brandId,
    access_status: access?.status ?? ('none' as const),
    postback_url: home ? a.postbackUrl : '',
    postback_enabled: home && a.postbackEnabled === 1,
    postback_failures: home ? a.postbackFailures : 0,
    postback_disabled_reason: home ? a.postbackDisabledReason : '',
    postback_key_ids: home ? keys : [],
    created_time: Math.floor(a.createdAt / 1000),
  }
}

const notHomeBrand = () => refuse('NOT_HOME_BRAND', "only staff of the affiliate's home brand may do this")

/** An affiliate of the staff's own brand: another brand's (even with access here) is 403 NOT_HOME_BRAND. */
export async function homeAffiliate(ctx: AffiliateCtx, brandId: number, id: number) {
  const row = await affiliateOfBrand(ctx, brandId, id)
  if (row.a.brandId !== brandId) throw notHomeBrand()
  return row
}

/** An affiliate with access to the brand (its own or granted): staff of other brands get 404. */
export async function affiliateOfBrand(ctx: AffiliateCtx, brandId: number, id: number) {
  const [row] = await ctx.db
    .select({ a: affiliates, access: affiliateAccess })
    .from(affiliates)
    .innerJoin(
      affiliateAccess,
      and(eq(affiliateAccess.affiliateId, affiliates.id), eq(affiliateAccess.brandId, brandId)),
    )
    .where(eq(affiliates.id, id))
  if (!row) throw notFound()
  return row
}

async function keyIds(ctx: AffiliateCtx, id: number) {
  const rows = await ctx.db
    .select({ id: postbackKeys.id })
    .from(postbackKeys)
    .where(eq(postbackKeys.affiliateId, id))
    .orderBy(desc(postbackKeys.createdAt))
  return rows.map((r) => r.id)
}

export async function readAffiliate(ctx: AffiliateCtx, brandId: number, id: number) {
  const { a, access } = await affiliateOfBrand(ctx, brandId, id)
  return affiliateView(a, access, brandId, a.brandId === brandId ? await keyIds(ctx, id) : [])
}

export async function listAffiliates(
  ctx: AffiliateCtx,
  brandId: number,
  q: { status?: 'active' | 'suspended'; before?: number; limit?: number },
) {
  const limit = q.limit ?? 100
  const rows = await ctx.db
    .select({ a: affiliates, access: affiliateAccess })
    .from(affiliates)
    .innerJoin(
      affiliateAccess,
      and(eq(affiliateAccess.affiliateId, affiliates.id), eq(affiliateAccess.brandId, brandId)),
    )
    .where(
      and(
        q.status ? eq(affiliates.status, q.status) : undefined,
        q.before ? lt(affiliates.id, q.before) : undefined,
      ),
    )
    .orderBy(desc(affiliates.id))
    .limit(limit)
  return {
    rows: rows.map((r) => affiliateView(r.a, r.access, brandId)),
    next_before: rows.length === limit ? rows[rows.length - 1].a.id : 0,
  }
}

interface NewAffiliate {
  email: string
  code: string
  name?: string
  password: string
  postback_url?: string
}

/** Creates an affiliate of the brand with access to it and its cabinet password there. */
export async function createAffiliate(ctx: AffiliateCtx, brandId: number, input: NewAffiliate) {
  if (input.postback_url) await checkPostbackUrl(ctx, brandId, input.postback_url)
  const passwordHash = await hashPassword(input.password)
  const now = ctx.clock.now()
  try {
    const id = await ctx.db.transaction(async (tx) => {
      // a code is one in any case: the cabinet's login takes it in any case (the unique index does not)
      const [same] = await tx
        .select({ id: affiliates.id })
        .from(affiliates)
        .where(sql`${affiliates.code} = ${input.code} collate nocase`)
        .limit(1)
      if (same) throw refuse('AFFILIATE_EXISTS', 'an affiliate with this email or code exists')
      const [a] = await tx
        .insert(affiliates)
        .values({
          brandId,
          email: input.email.trim().toLowerCase(),
          code: input.code,
          name: input.name ?? '',
          postbackUrl: input.postback_url ?? '',
          createdAt: now,
        })
        .returning({ id: affiliates.id })
      await tx.insert(affiliateAccess).values({ affiliateId: a.id, brandId, passwordHash, createdAt: now })
      return a.id
    })
    return readAffiliate(ctx, brandId, id)
  } catch (e) {
    if (isUniqueViolation(e)) throw refuse('AFFILIATE_EXISTS', 'an affiliate with this email or code exists')
    throw e
  }
}

interface AffiliateChanges {
  name?: string
  status?: 'active' | 'suspended'
  password?: string
  postback_url?: string
  postback_enabled?: boolean
}

/**
 * Ends an affiliate's cabinet sessions (on one brand, or all): a new password, a suspension or a revoked
 * access must not leave a session that a stolen cookie keeps alive once the affiliate is let in again.
 * Integration tokens are credentials of their own, revoked one by one.
 */
async function endCabinetSessions(ctx: AffiliateCtx, tx: Tx, affiliateId: number, brandId?: number) {
  await tx
    .update(affiliateTokens)
    .set({ revokedAt: ctx.clock.now() })
    .where(
      and(
        eq(affiliateTokens.affiliateId, affiliateId),
        eq(affiliateTokens.kind, 'cabinet'),
        isNull(affiliateTokens.revokedAt),
        brandId === undefined ? undefined : eq(affiliateTokens.brandId, brandId),
      ),
    )
}

/**
 * Staff of the affiliate's home brand change its profile and status; staff of a brand it has access to
 * change only its password there. A suspension stops its codes and links attributing (directory cache)
 * and its tokens (their next request), and ends its cabinet sessions; a new password ends its cabinet
 * sessions on that brand.
 */
export async function updateAffiliate(
  ctx: AffiliateCtx,
  dir: AffiliateDirectory,
  brandId: number,
  id: number,
  input: AffiliateChanges,
) {
  const { a } = await affiliateOfBrand(ctx, brandId, id)
  const profile = input.name !== undefined || input.status !== undefined || input.postback_url !== undefined
  if ((profile || input.postback_enabled !== undefined) && a.brandId !== brandId) throw notHomeBrand()
  if (input.postback_url) await checkPostbackUrl(ctx, brandId, input.postback_url)
  const passwordHash = input.password ? await hashPassword(input.password) : undefined
  await ctx.db.transaction(async (tx) => {
    const set: Partial<AffiliateRow> = {}
    if (input.name !== undefined) set.name = input.name
    if (input.status !== undefined) await changeStatus(ctx, tx, id, input.status)
    if (input.postback_url !== undefined) set.postbackUrl = input.postback_url
    if (input.postback_enabled !== undefined) {
      set.postbackEnabled = input.postback_enabled ? 1 : 0
      // a re-enabled endpoint starts counting its failures afresh
      if (input.postback_enabled) Object.assign(set, { postbackFailures: 0, postbackDisabledReason: '' })
    }
    if (Object.keys(set).length) await tx.update(affiliates).set(set).where(eq(affiliates.id, id))
    // a new endpoint: the ones parked for a setting go out; cleared, the sender parks them (30 days for
    // a URL to be saved again: a mistake loses nothing)
    if (input.postback_url) await wakeParkedPostbacks(tx, { affiliateId: id }, ctx.clock.now())
    if (passwordHash) {
      await tx
        .update(affiliateAccess)
        .set({ passwordHash })
        .where(and(eq(affiliateAccess.affiliateId, id), eq(affiliateAccess.brandId, brandId)))
      await endCabinetSessions(ctx, tx, id, brandId)
    }
    if (input.status === 'suspended') await endCabinetSessions(ctx, tx, id)
  })
  if (input.status !== undefined) await forgetAffiliate(ctx, dir, id)
  return readAffiliate(ctx, brandId, id)
}

/**
 * A change of the affiliate's own status, dated in its standing (what it earns depends on it over time):
 * conditional, so two requests at once date one change.
 */
async function changeStatus(ctx: AffiliateCtx, tx: Tx, id: number, status: 'active' | 'suspended') {
  const changed = await tx
    .update(affiliates)
    .set({ status })
    .where(and(eq(affiliates.id, id), ne(affiliates.status, status)))
    .returning({ id: affiliates.id })
  if (changed.length > 0)
    await tx
      .insert(standingChanges)
      .values({ affiliateId: id, brandId: 0, status, fromTime: ctx.clock.now() })
}

/** Drops the cached codes of an affiliate and its links on every brand it has access to. */
async function forgetAffiliate(ctx: AffiliateCtx, dir: AffiliateDirectory, id: number) {
  const [a] = await ctx.db.select({ code: affiliates.code }).from(affiliates).where(eq(affiliates.id, id))
  const access = await ctx.db
    .select({ brandId: affiliateAccess.brandId })
    .from(affiliateAccess)
    .where(eq(affiliateAccess.affiliateId, id))
  const links = await ctx.db
    .select({ brandId: trackingLinks.brandId, code: trackingLinks.code })
    .from(trackingLinks)
    .where(eq(trackingLinks.affiliateId, id))
  for (const b of access) await dir.forget(b.brandId, { affiliate: a?.code })
  for (const l of links) await dir.forget(l.brandId, { link: l.code })
}

/**
 * Grants or revokes an affiliate's access to the staff's brand, found by its code (an affiliate of
 * another brand is not listed here until it has access). A grant sets the cabinet password there; a
 * revocation or a new password ends the cabinet sessions there.
 */
export async function setAccess(
  ctx: AffiliateCtx,
  dir: AffiliateDirectory,
  brandId: number,
  code: string,
  input: { status: 'active' | 'revoked'; password?: string },
) {
  const [a] = await ctx.db.select().from(affiliates).where(eq(affiliates.code, code))
  if (!a) throw notFound()
  const passwordHash = input.password ? await hashPassword(input.password) : undefined
  const [had] = await ctx.db
    .select()
    .from(affiliateAccess)
    .where(and(eq(affiliateAccess.affiliateId, a.id), eq(affiliateAccess.brandId, brandId)))
  // an access revoked before it ever had a password has none: granting it again needs one
  if (!had?.passwordHash && input.status === 'active' && !passwordHash)
    throw refuse('INVALID_DATA', 'password: required when access is granted')
  await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const added = await tx
      .insert(affiliateAccess)
      .values({
        affiliateId: a.id,
        brandId,
        status: input.status,
        passwordHash: passwordHash ?? '',
        createdAt: now,
      })
      .onConflictDoNothing()
      .returning({ id: affiliateAccess.affiliateId })
    const mine = and(eq(affiliateAccess.affiliateId, a.id), eq(affiliateAccess.brandId, brandId))
    // conditional, so two requests at once date one change in its standing (what it earns here over time)
    const changed =
      added.length > 0
        ? []
        : await tx
            .update(affiliateAccess)
            .set({ status: input.status })
            .where(and(mine, ne(affiliateAccess.status, input.status)))
            .returning({ id: affiliateAccess.affiliateId })
    if (changed.length > 0 || (added.length > 0 && input.status === 'revoked'))
      await tx
        .insert(standingChanges)
        .values({ affiliateId: a.id, brandId, status: input.status, fromTime: now })
    if (passwordHash && added.length === 0) await tx.update(affiliateAccess).set({ passwordHash }).where(mine)
    if (input.status === 'revoked' || passwordHash) await endCabinetSessions(ctx, tx, a.id, brandId)
  })
  await forgetAffiliate(ctx, dir, a.id)
  return readAffiliate(ctx, brandId, a.id)
}
