import { and, count, eq, gt, inArray, isNotNull, isNull, lte, or } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import { kycDocuments, kycSteps } from '../schema'
import { inList, recomputeMany, settingsOf } from './shared'

/** Due documents a read takes at most; those of one brand expire in one transaction whatever their number. */
export const EXPIRE_PAGE = 100

/** Reads of due documents a run works through (1,000 documents elsewhere). */
export const EXPIRE_PAGES_PER_RUN = { edge: 4, server: 10 }

/**
 * At the edge every job due in a scheduled() invocation shares its 1,000 subrequests (each statement
 * one). A run's cost goes with the brands whose documents it expires, not with the documents: a brand's
 * documents of a read are one transaction of about ten statements, one document or a hundred. A run at
 * the edge works through this many brand transactions (about 40 subrequests with its reads, whatever
 * the number of brands whose documents lapsed) and leaves the rest for the next minute.
 */
export const EXPIRE_EDGE_BRANDS = 4

/**
 * Documents past their validity date expire; a step approved on them expires with them when fewer than
 * its minimum remain valid, and the customer is asked again (profile `expired`). Set-based, a page at a
 * time: each document moves once (a conditional UPDATE on its status, whichever instance gets there
 * first), and only the profiles of customers whose step expired are derived again. Returns the documents
 * this run expired.
 */
export async function expireDocuments({ ctx }: UseCase<KycCtx>) {
  const now = ctx.clock.now()
  const pages = ctx.edge ? EXPIRE_PAGES_PER_RUN.edge : EXPIRE_PAGES_PER_RUN.server
  const brandsPerRun = ctx.edge ? EXPIRE_EDGE_BRANDS : Number.POSITIVE_INFINITY
  let expired = 0
  let brands = 0
  for (let page = 0; page < pages && brands < brandsPerRun; page++) {
    const due = await ctx.db
      .select({ id: kycDocuments.id, brandId: kycDocuments.brandId })
      .from(kycDocuments)
      .where(
        and(
          inArray(kycDocuments.status, ['pending', 'approved']),
          isNotNull(kycDocuments.validUntil),
          lte(kycDocuments.validUntil, now),
        ),
      )
      .limit(EXPIRE_PAGE)
    const byBrand = new Map<number, number[]>()
    for (const d of due) byBrand.set(d.brandId, [...(byBrand.get(d.brandId) ?? []), d.id])
    for (const [brandId, ids] of byBrand) {
      // a run's cost at the edge is its brand transactions: the documents of the brands past its bound
      // are read again by the next run
      if (brands >= brandsPerRun) return expired
      brands++
      expired += await expirePage(ctx, brandId, ids, now)
    }
    if (due.length < EXPIRE_PAGE) break
  }
  return expired
}

/** The brand's documents `ids` (due when read) expire, and what follows from it; returns how many moved here. */
async function expirePage(ctx: KycCtx, brandId: number, ids: number[], now: number) {
  return ctx.uow.run(async (tx, work) => {
    const moved = await tx
      .update(kycDocuments)
      .set({ status: 'expired' })
      .where(
        and(
          eq(kycDocuments.brandId, brandId),
          inList(kycDocuments.id, ids),
          inArray(kycDocuments.status, ['pending', 'approved']),
          lte(kycDocuments.validUntil, now),
        ),
      )
      .returning({ customerId: kycDocuments.customerId, stepCode: kycDocuments.stepCode })
    if (moved.length === 0) return 0
    const s = await settingsOf(ctx, brandId, tx)
    const customers = [...new Set(moved.map((d) => d.customerId))]
    // the documents still valid of each (customer, step) that lost one: a document without a validity
    // date never expires (SQL: NULL > now is never true)
    const valid = await tx
      .select({ customerId: kycDocuments.customerId, stepCode: kycDocuments.stepCode, n: count() })
      .from(kycDocuments)
      .where(
        and(
          eq(kycDocuments.brandId, brandId),
          inList(kycDocuments.customerId, customers),
          eq(kycDocuments.status, 'approved'),
          or(isNull(kycDocuments.validUntil), gt(kycDocuments.validUntil, now)),
        ),
      )
      .groupBy(kycDocuments.customerId, kycDocuments.stepCode)
    const validOf = new Map(valid.map((v) => [`${v.customerId}:${v.stepCode}`, v.n]))
    // the steps left short of their minimum, by step code
    const short = new Map<string, Set<number>>()
    for (const d of moved) {
      const min = s.steps.find((x) => x.code === d.stepCode)?.documents?.min ?? 1
      if ((validOf.get(`${d.customerId}:${d.stepCode}`) ?? 0) >= min) continue
      const set = short.get(d.stepCode) ?? new Set<number>()
      set.add(d.customerId)
      short.set(d.stepCode, set)
    }
    const changed = new Set<number>()
    for (const [code, who] of short) {
      const steps = await tx
        .update(kycSteps)
        .set({ status: 'expired', rejectionReason: 'the document has expired', updatedAt: now })
        .where(
          and(
            eq(kycSteps.brandId, brandId),
            inList(kycSteps.customerId, [...who]),
            eq(kycSteps.code, code),
            eq(kycSteps.status, 'approved'),
          ),
        )
        .returning({ customerId: kycSteps.customerId })
      for (const r of steps) changed.add(r.customerId)
    }
    // only a step that expired changes what a profile's steps give
    await recomputeMany(tx, work, brandId, [...changed], s, now)
    return moved.length
  })
}
