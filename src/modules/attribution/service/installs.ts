import { and, eq, isNull } from 'drizzle-orm'
import type { AttributionCtx } from '../context'
import { isCrawler } from '../domain/bots'
import { hasValues, parseParams, parseReferrer } from '../domain/params'
import { refuse } from '../errors'
import { installs } from '../schema'
import { hashAddress, insertTouches, matchCodes } from './touches'

type InstallRow = typeof installs.$inferSelect

const view = (i: InstallRow) => ({
  installation_id: i.installationId,
  platform: i.platform,
  attributed: i.touchId !== null,
  created_time: Math.floor(i.createdAt / 1000),
  activated_time: i.activatedAt ? Math.floor(i.activatedAt / 1000) : 0,
})

async function find(ctx: AttributionCtx, brandId: number, installationId: string) {
  const [row] = await ctx.db
    .select()
    .from(installs)
    .where(and(eq(installs.brandId, brandId), eq(installs.installationId, installationId)))
  return row ?? null
}

/**
 * POST /app: an install and its attribution values (given, or read from the store's install referrer).
 * The first report of an installation_id wins; a replay answers the recorded install unchanged.
 */
export async function recordInstall(
  ctx: AttributionCtx,
  brandId: number,
  input: {
    installation_id: string
    platform: string
    attribution?: Record<string, string>
    referrer?: string
  },
  meta: { ip: string; userAgent: string | null },
) {
  const had = await find(ctx, brandId, input.installation_id)
  if (had) return view(had)
  // the given values over the referrer's, in an object without a prototype as parseParams answers
  const params = Object.assign(
    input.referrer ? parseReferrer(input.referrer) : parseParams({}),
    parseParams(input.attribution ?? {}),
  )
  const now = ctx.clock.now()
  const match = hasValues(params) ? await matchCodes(ctx, brandId, params) : null
  const ipHash = hashAddress(ctx, meta.ip)
  await ctx.db.transaction(async (tx) => {
    const [created] = await tx
      .insert(installs)
      .values({ brandId, installationId: input.installation_id, platform: input.platform, createdAt: now })
      .onConflictDoNothing()
      .returning({ id: installs.id })
    if (!created || !hasValues(params)) return
    const [touchId] = await insertTouches(tx, [
      {
        brandId,
        visitorId: null,
        installationId: input.installation_id,
        source: 'install',
        affiliateId: match?.affiliateId ?? null,
        linkId: match?.linkId ?? null,
        params,
        bot: isCrawler(meta.userAgent),
        ipHash,
        userAgent: meta.userAgent ?? '',
        landingPath: '',
        referrer: input.referrer ?? '',
        createdAt: now,
      },
    ])
    await tx.update(installs).set({ touchId }).where(eq(installs.id, created.id))
  })
  return view((await find(ctx, brandId, input.installation_id))!)
}

/** POST /app/activate: the install's first open (a replay keeps the first time). */
export async function activateInstall(ctx: AttributionCtx, brandId: number, installationId: string) {
  await ctx.db
    .update(installs)
    .set({ activatedAt: ctx.clock.now() })
    .where(
      and(
        eq(installs.brandId, brandId),
        eq(installs.installationId, installationId),
        isNull(installs.activatedAt),
      ),
    )
  const row = await find(ctx, brandId, installationId)
  if (!row) throw refuse('INSTALL_NOT_FOUND', 'installation_id: no install of this brand (POST /app first)')
  return view(row)
}
