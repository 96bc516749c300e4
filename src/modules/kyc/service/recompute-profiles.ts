import { and, asc, eq, gt, lt } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import { kycProfiles, kycSettings } from '../schema'
import { ensureProfile, recompute, settingsOf } from './shared'

/** Profiles read at a time; each is recomputed in a transaction of its own. */
const PAGE = 200
/** How long one run works (the job runs again a minute later from where the settings' change still shows). */
const RUN_MS = 10_000

/**
 * The `kyc.recompute` job: settings saved since a profile's status was last stored (a step made optional,
 * added or removed) change what its steps give. Each such profile of the brand (stored before the
 * settings) gets rows for new steps and its status again, with the event a change emits, and is marked as
 * computed under them. Out of the save's request: a brand of 100,000 profiles takes minutes on a remote
 * database, and a read puts a profile right meanwhile (`load`).
 */
export async function recomputeProfiles({ ctx }: UseCase<KycCtx>) {
  const started = ctx.clock.now()
  for (const { brandId, updatedAt } of await ctx.db
    .select({ brandId: kycSettings.brandId, updatedAt: kycSettings.updatedAt })
    .from(kycSettings)) {
    for (let after = 0; ctx.clock.now() - started < RUN_MS; ) {
      const page = await ctx.db
        .select({ id: kycProfiles.id, customerId: kycProfiles.customerId })
        .from(kycProfiles)
        .where(
          and(
            eq(kycProfiles.brandId, brandId),
            lt(kycProfiles.updatedAt, updatedAt),
            gt(kycProfiles.id, after),
          ),
        )
        .orderBy(asc(kycProfiles.id))
        .limit(PAGE)
      for (const p of page)
        await ctx.uow.run(async (tx, work) => {
          const s = await settingsOf(ctx, brandId, tx)
          // never before the settings' own time (a clock behind theirs would select it again for ever)
          const now = Math.max(ctx.clock.now(), updatedAt)
          await ensureProfile(tx, brandId, p.customerId, s, now)
          await recompute(tx, work, brandId, p.customerId, s, now)
          await tx.update(kycProfiles).set({ updatedAt: now }).where(eq(kycProfiles.id, p.id))
        })
      if (page.length < PAGE) break
      after = page[page.length - 1]!.id
    }
  }
}
