import type { Brand } from '../../kernel/brand/registry'
import { definePort } from '../../kernel/module'

/** An affiliate code or link code resolved for a brand: what a touch is attributed to. */
export interface CodeMatch {
  affiliateId: number
  linkId: number | null
  /** the link's landing path on the brand ('/' for an affiliate code) */
  landingPath: string
  campaign: string
}

/** What attribution asks: the active affiliate or link behind a code of a brand. */
export interface AffiliateCodes {
  affiliate(brandId: number, code: string): Promise<CodeMatch | null>
  link(brandId: number, code: string): Promise<CodeMatch | null>
  /** Whether this email is the affiliate's own (a registration through its own link refers nobody). */
  isOwnEmail(affiliateId: number, email: string): Promise<boolean>
}
export const AffiliateCodesPort = definePort<AffiliateCodes>('affiliate.codes')

/** A click of an affiliate (a touch attributed to it, not a bot), as the cabinet lists it. */
export interface ClickRow {
  id: number
  time: number
  source: string
  link_id: number | null
  landing_path: string
  /** the visitor's country (ISO 3166-1 alpha-2) when the edge said it; '' otherwise */
  country: string
  values: Record<string, string>
  /** The first click of its visitor on its link within the hour (unique clicks count these). */
  unique: boolean
  /** Its address clicked like a script (a burst, rotating agents): counted raw, never unique. */
  suspect: boolean
}

/** What a report groups by: the UTC day, the link, a tracker's sub-id, the visitor's country, the landing page. */
export const REPORT_DIMENSIONS = [
  'day',
  'link',
  'sub1',
  'sub2',
  'sub3',
  'sub4',
  'sub5',
  'country',
  'landing',
] as const
export type ReportDimension = (typeof REPORT_DIMENSIONS)[number]

/** Clicks of one group of a report; `key` as the report shows it ('' when the click had no value). */
export interface ClickGroup {
  /** day: YYYY-MM-DD; link: the link id as text; sub1..sub5, country, landing: the value */
  key: string
  clicks: number
  unique: number
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
  /**
   * Clicks in [from, to) grouped by a report dimension. By day it counts pruned touches too (their daily
   * roll-up); the other dimensions cover the touches still kept (ATTRIBUTION_TOUCH_RETENTION_DAYS).
   */
  grouped(
    brandId: number,
    affiliateId: number,
    from: number,
    to: number,
    dimension: ReportDimension,
  ): Promise<ClickGroup[]>
}
/** The cabinet's page for the root of an affiliate host (attribution serves `/` on every host). */
export interface Cabinet {
  /** the site of the cabinet's hosts (kernel/brand/sites.ts) */
  site: string
  shell(brand: Brand): Response
}
export const CabinetPort = definePort<Cabinet>('affiliate.cabinet')

export const AffiliateClicksPort = definePort<AffiliateClicks>('affiliate.clicks')

/** A customer's attribution, as the attribution module decided it at registration (spec 4.16). */
export interface CustomerAttribution {
  brandId: number
  customerId: number
  /** The affiliate the winning touch's code named (an active one of the brand then), or null. */
  affiliateId: number | null
  /** The tracking link the winning touch came through, or null. */
  linkId: number | null
  /**
   * The public values the customer came with: campaign, click_id, sub1..sub5, utm_*, and the codes as
   * affiliate_code and link_code.
   */
  values: Record<string, string>
}

/**
 * Customers' attribution: an extension point the attribution module (listed after this one) fills;
 * without it no customer is referred.
 */
export interface CustomerAttributions {
  /** Read with the customer (the shared cache): written in its registration's transaction. */
  of(customerId: number): Promise<CustomerAttribution | null>
  /** Those of a page of customers of the brand, by id (one read, not one per customer). */
  ofMany(brandId: number, customerIds: readonly number[]): Promise<Map<number, CustomerAttribution>>
  /**
   * What a customer record read already says (accounts' `customersIn`: its id, brand and `attribution`
   * text), so a page that reads its customers for other fields reads them once; null when nobody referred it.
   */
  ofRecord(customer: { id: number; brandId: number; attribution: string | null }): CustomerAttribution | null
  /**
   * What a customer's record keeps when this affiliate and link referred it with these values (the
   * demo registers its referred customers with it); `wonBy` names the rule.
   */
  recordOf(referral: {
    affiliateId: number
    linkId: number | null
    values: Record<string, string>
    wonBy: string
  }): Record<string, string>
}
export const CustomerAttributionPort = definePort<CustomerAttributions>('affiliate.customer-attribution')
