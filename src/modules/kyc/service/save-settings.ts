import { invalid, issueText } from '../../../kernel/http/errors'
import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import { KycSettings } from '../domain/settings'
import { kycSettings } from '../schema'

export async function saveSettings({ ctx, brandId, input }: UseCase<KycCtx, unknown, { brandId: number }>) {
  const parsed = KycSettings.safeParse(input)
  if (!parsed.success) {
    throw invalid(issueText(parsed.error.issues[0]!))
  }
  const now = ctx.clock.now()
  const settings = JSON.stringify(parsed.data)
  await ctx.db
    .insert(kycSettings)
    .values({ brandId, settings, updatedAt: now })
    .onConflictDoUpdate({ target: kycSettings.brandId, set: { settings, updatedAt: now } })
  return parsed.data
}
