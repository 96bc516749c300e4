import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import { settingsOf } from './shared'

/** GET /manager/kyc/settings: the brand's steps and tiers (the defaults until staff save their own). */
export const readSettings = ({ ctx, brandId }: UseCase<KycCtx, undefined, { brandId: number }>) =>
  settingsOf(ctx, brandId)
