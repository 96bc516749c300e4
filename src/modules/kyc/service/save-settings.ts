import { invalid, issueText } from '../../../kernel/http/errors'
import { MAX_AMOUNT } from '../../../kernel/limits'
import type { UseCase } from '../../../kernel/use-case'
import { toMinor } from '../../accounts'
import type { KycCtx } from '../context'
import { KycSettings, unsavable } from '../domain/settings'
import { kycSettings } from '../schema'

export async function saveSettings({ ctx, brandId, input }: UseCase<KycCtx, unknown, { brandId: number }>) {
  const parsed = KycSettings.safeParse(input)
  if (!parsed.success) {
    throw invalid(issueText(parsed.error.issues[0]!))
  }
  const problem = unsavable(parsed.data, toMinor, MAX_AMOUNT)
  if (problem) throw invalid(problem)
  const now = ctx.clock.now()
  const settings = JSON.stringify(parsed.data)
  await ctx.db
    .insert(kycSettings)
    .values({ brandId, settings, updatedAt: now })
    .onConflictDoUpdate({ target: kycSettings.brandId, set: { settings, updatedAt: now } })
  return parsed.data
}
