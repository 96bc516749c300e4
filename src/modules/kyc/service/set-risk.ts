import type { KycCtx } from '../context'
import type { RiskLevel } from '../domain/status'
import { kycProfiles } from '../schema'
import { profileNotFound, scoped } from './shared'
import { staffProfile } from './staff-profile'

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
