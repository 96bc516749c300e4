import { and, asc, eq, exists, lt, sql } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import type { Work } from '../../../kernel/db/unit-of-work'
import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import { kycProfiles, kycSettings, kycSteps } from '../schema'
import { inList, recomputeMany, settingsOf } from './shared'

/** Profiles a page recomputes, in one transaction whatever their number (about eight statements). */
export const RECOMPUTE_PAGE = { edge: 40, server: 200 }
/**
 * At the edge every job due in a scheduled() invocation shares its 1,000 subrequests: a run works through
 * this many pages (each one transaction that recomputed profiles), and stops after the first page that
 * emitted events (the consumers' checks at write time cost a few subrequests an event). The job runs
 * again a minute later from where the settings' change still shows.
 */
export const RECOMPUTE_EDGE_PAGES = 5
/** How long one run works elsewhere. */
const RUN_MS = 10_000

/**
 * The `kyc.recompute` job: settings saved since a profile's status was last stored (a step made optional,
 * added or removed) change what its steps give. Each such profile of the brand (stored before the
 * settings) gets rows for new steps and its status again, with the event a change emits, and is marked as
 * computed under them. Out of the save's request: a brand of 100,000 profiles takes minutes on a remote
 * database, and a read puts a profile right meanwhile (`load`). A page of profiles is one transaction of
 * set statements: only the profiles whose status moves are written beyond their mark.
 *
 * A run starts with one read, the brands that have a profile stored before their settings: with nothing
 * stale it costs that read and opens no transaction, and a brand with nothing to do never takes a page
 * of the run's bound from one that has (every brand with work is reached, whatever the number of brands
 * that saved settings). A page reads one profile past its size, so a brand's last page is known without
 * an empty transaction after it.
 */
export async function recomputeProfiles({ ctx }: UseCase<KycCtx>) {
  const started = ctx.clock.now()
  const size = ctx.edge ? RECOMPUTE_PAGE.edge : RECOMPUTE_PAGE.server
  let pages = 0
  let events = 0
  const more = () =>
    ctx.edge ? pages < RECOMPUTE_EDGE_PAGES && events === 0 : ctx.clock.now() - started < RUN_MS
  const stale = await ctx.db
    .select({ brandId: kycSettings.brandId, updatedAt: kycSettings.updatedAt })
    .from(kycSettings)
    .where(
      exists(
        ctx.db
          .select({ one: sql`1` })
          .from(kycProfiles)
          .where(
            and(
              eq(kycProfiles.brandId, kycSettings.brandId),
              lt(kycProfiles.updatedAt, kycSettings.updatedAt),
            ),
          ),
      ),
    )
  for (const { brandId, updatedAt } of stale) {
    if (!more()) break
    for (;;) {
      const done = await ctx.uow.run((tx, work) => recomputePage(ctx, tx, work, brandId, updatedAt, size))
      // a page another instance recomputed first (it read nothing) costs no page of the bound
      if (done.size > 0) pages++
      events += done.events
      if (!done.more || !more()) break
    }
  }
}

/**
 * The next `size` profiles of the brand stored before its settings of `updatedAt`; returns how many it
 * recomputed, whether more are left and the events their moves emitted.
 */
async function recomputePage(
  ctx: KycCtx,
  tx: Tx,
  work: Work,
  brandId: number,
  updatedAt: number,
  size: number,
) {
  // read in the transaction: an instance working alongside sees this page marked once it commits
  const page = await tx
    .select({ id: kycProfiles.id, customerId: kycProfiles.customerId })
    .from(kycProfiles)
    .where(and(eq(kycProfiles.brandId, brandId), lt(kycProfiles.updatedAt, updatedAt)))
    .orderBy(asc(kycProfiles.id))
    .limit(size + 1)
  const more = page.length > size
  if (more) page.pop()
  if (page.length === 0) return { size: 0, more, events: 0 }
  const s = await settingsOf(ctx, brandId, tx)
  // never before the settings' own time (a clock behind theirs would select it again for ever)
  const now = Math.max(ctx.clock.now(), updatedAt)
  const customers = page.map((p) => p.customerId)
  // a row for each configured step a profile lacks (a step added since)
  const have = await tx
    .select({ customerId: kycSteps.customerId, code: kycSteps.code })
    .from(kycSteps)
    .where(and(eq(kycSteps.brandId, brandId), inList(kycSteps.customerId, customers)))
  const had = new Set(have.map((r) => `${r.customerId}:${r.code}`))
  const missing = customers.flatMap((customerId) =>
    s.steps
      .filter((st) => !had.has(`${customerId}:${st.code}`))
      .map((st) => ({ brandId, customerId, code: st.code, updatedAt: now })),
  )
  if (missing.length > 0) await tx.insert(kycSteps).values(missing).onConflictDoNothing()
  const { events } = await recomputeMany(tx, work, brandId, customers, s, now)
  // computed under these settings (those whose status moved are marked already)
  await tx
    .update(kycProfiles)
    .set({ updatedAt: now })
    .where(
      and(
        eq(kycProfiles.brandId, brandId),
        inList(
          kycProfiles.id,
          page.map((p) => p.id),
        ),
        lt(kycProfiles.updatedAt, updatedAt),
      ),
    )
  return { size: page.length, more, events }
}
