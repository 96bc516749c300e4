import type { UseCase } from '../../../kernel/use-case'
import type { KycCtx } from '../context'
import { type CustomerScope, existingProfile, load, profileView } from './shared'

export async function staffProfile({ ctx, brandId, customerId }: UseCase<KycCtx, undefined, CustomerScope>) {
  await existingProfile(ctx, brandId, customerId)
  return profileView(await load(ctx, brandId, customerId), true)
}
