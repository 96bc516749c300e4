import type { KycCtx } from '../context'
import { existingProfile, load, profileView } from './shared'

export async function staffProfile(ctx: KycCtx, brandId: number, customerId: number) {
  await existingProfile(ctx, brandId, customerId)
  return profileView(await load(ctx, brandId, customerId), true)
}
