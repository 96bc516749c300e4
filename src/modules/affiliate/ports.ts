import type { Brand } from '../../kernel/brand/registry'
import { definePort } from '../../kernel/module'
import type { CodeMatch } from './service/directory'

/** What attribution asks: the active affiliate or link behind a code of a brand. */
export interface AffiliateCodes {
  affiliate(brandId: number, code: string): Promise<CodeMatch | null>
  link(brandId: number, code: string): Promise<CodeMatch | null>
}
export const AffiliateCodesPort = definePort<AffiliateCodes>('affiliate.codes')

/** A click of an affiliate (a touch attributed to it, not a bot), as the cabinet lists it. */
export interface ClickRow {
  id: number
  time: number
  source: string
  link_id: number | null
  landing_path: string
  values: Record<string, string>
  /** The first click of its visitor on its link within the hour (unique clicks count these). */
  unique: boolean
  /** Its address clicked like a script (a burst, rotating agents): counted raw, never unique. */
  suspect: boolean
}

/**
 * The clicks of an affiliate's funnel: an extension point the attribution module (listed after this one)
 * fills; without it the funnel has no clicks.
 */
export interface AffiliateClicks {
  /** per UTC day (epoch days) in [from, to) */
  perDay(
    brandId: number,
    affiliateId: number,
    from: number,
    to: number,
  ): Promise<{ day: number; clicks: number; unique: number }[]>
  /** newest first, keyset below (time, id) */
  list(
    brandId: number,
    affiliateId: number,
    from: number,
    to: number,
    below: { time: number; id: number } | null,
    limit: number,
  ): Promise<ClickRow[]>
}
/** The cabinet's page for the root of an affiliate host (attribution serves `/` on every host). */
export interface Cabinet {
  shell(brand: Brand): Response
}
export const CabinetPort = definePort<Cabinet>('affiliate.cabinet')

export const AffiliateClicksPort = definePort<AffiliateClicks>('affiliate.clicks')
