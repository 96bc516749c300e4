import { and, desc, eq, lt } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import type { ProfileStatus, RiskLevel } from '../domain/status'
import { kycProfiles } from '../schema'
import { time } from './shared'

export async function listProfiles({
  ctx,
  brandId,
  input: query,
}: UseCase<KycCtx, { status?: string; cursor?: number; limit?: number }, { brandId: number }>) {
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
