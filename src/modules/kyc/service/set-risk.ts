import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import type { RiskLevel } from '../domain/status'
import { kycProfiles } from '../schema'
import { type CustomerScope, profileNotFound, scoped } from './shared'
import { staffProfile } from './staff-profile'

export async function setRisk({
  ctx,
  brandId,
  customerId,
  input,
}: UseCase<KycCtx, { risk_level: RiskLevel; comment?: string }, CustomerScope>) {
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
  return staffProfile({ ctx, brandId, customerId })
}
