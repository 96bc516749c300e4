import { and, eq, gte, sql } from 'drizzle-orm'
import type { Brand } from '../../../kernel/brand/registry'
import type { RegistrationAttribution } from '../../auth'
import type { AttributionCtx } from '../context'
import { isCrawler } from '../domain/bots'
import { hasValues, type Params, parseParams, storedParams } from '../domain/params'
import { toRecord } from '../domain/record'
import { canWin, chooseTouch } from '../domain/winner'
import { decisions, installs, touches } from '../schema'
import { hashAddress, insertTouches, matchCodes } from './touches'

type TouchRow = typeof touches.$inferSelect

interface RegistrationClues {
  /** the registrant's: an affiliate registering through its own link or code refers nobody */
  email: string
  /** public values an external landing page passed in the body */
  values?: Record<string, string>
  installationId?: string
  visitorId: string | null
  ip: string
  userAgent: string | null
}

/**
 * The attribution a new customer gets (domain/winner.ts orders the candidates): the winning touch's
 * values and ids, the rule, and the decision row that lists every touch considered (staff read it).
 * Body values are recorded as a touch of their own, so every attributed customer has a touch that won.
 * A registration that then creates nobody (a taken email) abandons it: the decision and the body's touch go.
 */
export async function attributeRegistration(
  ctx: AttributionCtx,
  brand: Brand,
  clues: RegistrationClues,
): Promise<RegistrationAttribution> {
  // the visitor's last landing hits may still be in the buffer
  if (clues.visitorId) await ctx.touchWriter.flush()
  const now = ctx.clock.now()
  const visitorTouches = clues.visitorId
    ? (
        await ctx.db
          .select()
          .from(touches)
          .where(
            and(
              eq(touches.brandId, brand.id),
              eq(touches.visitorId, clues.visitorId),
              gte(touches.createdAt, now - ctx.windowMs),
            ),
          )
      ).map(asRead)
    : []
  const installTouch = clues.installationId ? await installTouchOf(ctx, brand.id, clues.installationId) : null
  // the body's values count unless the install wins (a bot's install, or one past the window, does not)
  const installWins = installTouch !== null && canWin(installTouch, now, ctx.windowMs)
  const bodyParams: Params = clues.values ? parseParams(clues.values) : {}
  const bodyMatch = hasValues(bodyParams) && !installWins ? await matchCodes(ctx, brand.id, bodyParams) : null
  // the affiliates any candidate touch names whose own email registers now: their touches refer nobody
  const named = new Set(
    [installTouch?.affiliateId, bodyMatch?.affiliateId, ...visitorTouches.map((t) => t.affiliateId)].filter(
      (id): id is number => typeof id === 'number',
    ),
  )
  const own = new Set<number>()
  for (const id of named) if (await ctx.codes.isOwnEmail(id, clues.email)) own.add(id)
  // the touch that wins unless the body does (the body's codes are matched now): as its codes stand now
  const early = chooseTouch(visitorTouches, { now, windowMs: ctx.windowMs, installTouch, bodyTouch: null })
  const earlyTouch = [installTouch, ...visitorTouches].find((t) => t && t.id === early.touchId) ?? null
  const earlyStanding = earlyTouch ? await standing(ctx, brand.id, earlyTouch) : null
  const made = await ctx.db.transaction(async (tx) => {
    let bodyTouch: typeof touches.$inferSelect | null = null
    if (hasValues(bodyParams) && !installWins) {
      const match = bodyMatch
      const [id] = await insertTouches(tx, [
        {
          brandId: brand.id,
          visitorId: clues.visitorId,
          installationId: null,
          source: 'registration',
          affiliateId: match?.affiliateId ?? null,
          linkId: match?.linkId ?? null,
          params: bodyParams,
          bot: isCrawler(clues.userAgent),
          ipHash: hashAddress(ctx, clues.ip),
          userAgent: clues.userAgent ?? '',
          landingPath: '',
          referrer: '',
          createdAt: now,
        },
      ])
      ;[bodyTouch] = await tx.select().from(touches).where(eq(touches.id, id))
    }
    const choice = chooseTouch(visitorTouches, { now, windowMs: ctx.windowMs, installTouch, bodyTouch })
    const chosen = [installTouch, bodyTouch, ...visitorTouches].find((t) => t && t.id === choice.touchId)
    const won = chosen && chosen.id === earlyStanding?.id ? earlyStanding : chosen
    const selfReferral = won?.affiliateId != null && own.has(won.affiliateId)
    const [decision] = await tx
      .insert(decisions)
      .values({
        brandId: brand.id,
        visitorId: clues.visitorId,
        installationId: clues.installationId ?? null,
        touchId: choice.touchId,
        wonBy: selfReferral ? 'self_referral' : choice.wonBy,
        considered: JSON.stringify(choice.considered),
        windowDays: Math.round(ctx.windowMs / 86_400_000),
        createdAt: now,
      })
      .returning({ id: decisions.id })
    const attribution = !won
      ? null
      : selfReferral
        ? attributionRecord(unreferred(won), 'self_referral', decision.id, undefined)
        : attributionRecord(won, choice.wonBy, decision.id, clues.installationId)
    return { attribution, decisionId: decision.id, bodyTouchId: bodyTouch?.id ?? null }
  })
  return {
    attribution: made.attribution,
    abandon: async (tx) => {
      await tx
        .delete(decisions)
        .where(and(eq(decisions.id, made.decisionId), eq(decisions.brandId, brand.id)))
      if (made.bodyTouchId !== null)
        await tx.delete(touches).where(
          and(
            eq(touches.id, made.bodyTouchId),
            eq(touches.source, 'registration'),
            // another registration of the same visitor at once may have chosen it
            sql`not exists (select 1 from attribution_decisions d where d.touch_id = ${made.bodyTouchId})`,
          ),
        )
    },
  }
}

/**
 * A touch as its codes stand at the registration: its affiliate and link were active when it was made; an
 * affiliate suspended since (or its access to the brand revoked) refers nobody through it, and a link
 * deactivated since refers through nothing but the touch's affiliate code, if that one is still active.
 * The touch still wins (its values stay the customer's), as a touch made now with its codes would
 * (recorded unattributed). Codes are read through the directory (cached up to 10 s, as for new touches);
 * a code that matched nothing then never attributes later.
 */
async function standing(ctx: AttributionCtx, brandId: number, t: TouchRow): Promise<TouchRow> {
  if (t.affiliateId === null) return t
  const match = await matchCodes(ctx, brandId, JSON.parse(t.params) as Params)
  if (match?.affiliateId !== t.affiliateId) return { ...t, affiliateId: null, linkId: null }
  return match.linkId === t.linkId ? t : { ...t, linkId: null }
}

/** A touch as if it named no affiliate: its marketing values stay, its affiliate and link codes do not. */
function unreferred(t: TouchRow): TouchRow {
  const { affiliate: _a, link: _l, ...rest } = JSON.parse(t.params) as Params
  return { ...t, affiliateId: null, linkId: null, params: JSON.stringify(rest) }
}

async function installTouchOf(ctx: AttributionCtx, brandId: number, installationId: string) {
  const [row] = await ctx.db
    .select({ t: touches })
    .from(installs)
    .innerJoin(touches, eq(touches.id, installs.touchId))
    .where(and(eq(installs.brandId, brandId), eq(installs.installationId, installationId)))
  const t = row ? asRead(row.t) : null
  return t && t.direct === 0 ? t : null
}

/** A stored touch with its values as this version reads them (storedParams): one left with none is direct. */
function asRead(t: TouchRow): TouchRow {
  const params = storedParams(t.params)
  return { ...t, params: JSON.stringify(params), direct: hasValues(params) ? 0 : 1 }
}

/** The winning touch's attribution, as the customer's record keeps it (domain/record.ts). */
function attributionRecord(
  t: TouchRow,
  wonBy: string,
  decisionId: number,
  installationId: string | undefined,
): Record<string, string> {
  const params = JSON.parse(t.params) as Params
  const values: Record<string, string> = Object.create(null)
  for (const [k, v] of Object.entries(params))
    if (v) values[k === 'affiliate' ? 'affiliate_code' : k === 'link' ? 'link_code' : k] = v
  return toRecord({
    values,
    affiliateId: t.affiliateId,
    linkId: t.linkId,
    installationId: installationId && wonBy === 'install' ? installationId : null,
    touchId: t.id,
    wonBy,
    decisionId,
  })
}
