import { and, desc, eq, inArray, sql } from 'drizzle-orm'
import { invalid } from '../../../kernel/http/errors'
import { fromMinor } from '../../accounts'
import type { AffiliateCtx } from '../context'
import { CONVERSION_KINDS, type ConversionKind } from '../domain/conversions'
import { decodeCursor, encodeCursor } from '../domain/cursor'
import { daysOf, type Period } from '../domain/range'
import type { AffiliateClicks } from '../ports'
import { conversions, trackingLinks } from '../schema'
import { conversionPage, conversionsOf } from '../service/conversion-pages'
import { trackingOfCustomers } from '../service/referral'
import { conversionView } from '../views'
import type { AffiliatePrincipal } from './tokens'

export interface FunnelCtx extends AffiliateCtx {
  clicks: () => AffiliateClicks | null
}

const DAY = 86_400_000
const rate = (n: number, d: number) => (d > 0 ? Math.round((n / d) * 10_000) / 10_000 : 0)

/**
 * The dashboard of spec 4.17: the funnel of the affiliate on the brand in the period (clicks,
 * registrations, KYC approvals, first deposits, active traders, deposits and their volume), its rates,
 * and a series per day. Every number is a count of the rows the conversions and clicks lists show for the
 * same period and kind.
 */
export async function dashboard(ctx: FunnelCtx, p: AffiliatePrincipal, period: Period) {
  const day = sql<number>`${conversions.eventTime} / 86400000`
  const rows = await ctx.db
    .select({
      kind: conversions.kind,
      currency: conversions.currency,
      day,
      n: sql<number>`count(*)`,
      sum: sql<number>`coalesce(sum(${conversions.valueMinor}), 0)`,
    })
    .from(conversions)
    .where(
      conversionsOf({ brandId: p.brandId, affiliateId: p.affiliate.id, from: period.from, to: period.to }),
    )
    .groupBy(conversions.kind, conversions.currency, day)
  const clickDays = (await ctx.clicks()?.perDay(p.brandId, p.affiliate.id, period.from, period.to)) ?? []
  const days = daysOf(period)
  const firstDay = Math.floor(period.from / DAY)
  const series: Record<string, number[]> = Object.fromEntries(
    ['clicks', ...CONVERSION_KINDS].map((k) => [k, days.map(() => 0)]),
  )
  for (const c of clickDays) series.clicks[c.day - firstDay] += c.clicks
  const count: Record<string, number> = Object.fromEntries(['clicks', ...CONVERSION_KINDS].map((k) => [k, 0]))
  count.clicks = clickDays.reduce((s, c) => s + c.clicks, 0)
  const uniqueClicks = clickDays.reduce((s, c) => s + c.unique, 0)
  const volume = new Map<string, { deposits: number; reversals: number }>()
  for (const r of rows) {
    const n = Number(r.n)
    count[r.kind] += n
    series[r.kind][Number(r.day) - firstDay] += n
    if (r.kind === 'deposit' || r.kind === 'deposit_reversal') {
      const v = volume.get(r.currency) ?? { deposits: 0, reversals: 0 }
      if (r.kind === 'deposit') v.deposits += Number(r.sum)
      else v.reversals += Number(r.sum)
      volume.set(r.currency, v)
    }
  }
  return {
    range: period.range,
    from: new Date(period.from).toISOString().slice(0, 10),
    to: new Date(period.to - DAY).toISOString().slice(0, 10),
    funnel: {
      clicks: count.clicks,
      unique_clicks: uniqueClicks,
      registrations: count.registration,
      kyc_approvals: count.kyc_approval,
      first_deposits: count.first_deposit,
      active_traders: count.active_trader,
      deposits: count.deposit,
      reversals: count.deposit_reversal,
    },
    deposit_volume: [...volume.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([currency, v]) => ({
        currency,
        deposits: fromMinor(v.deposits, currency),
        reversals: fromMinor(v.reversals, currency),
        net: fromMinor(v.deposits + v.reversals, currency),
      })),
    rates: {
      registration: rate(count.registration, uniqueClicks),
      kyc_approval: rate(count.kyc_approval, count.registration),
      first_deposit: rate(count.first_deposit, count.registration),
      active_trader: rate(count.active_trader, count.registration),
    },
    series: { days, ...series },
  }
}

/** The rows behind a funnel number: conversions of the period, newest first, by cursor. */
export async function conversionsPage(
  ctx: FunnelCtx,
  p: AffiliatePrincipal,
  period: Period,
  q: { kind?: ConversionKind; cursor?: string; limit?: number },
) {
  const { list, has_more, next_cursor } = await conversionPage(
    ctx,
    {
      brandId: p.brandId,
      affiliateId: p.affiliate.id,
      from: period.from,
      to: period.to,
      kinds: q.kind ? [q.kind] : undefined,
    },
    cursorOf(q.cursor),
    q.limit ?? 50,
  )
  const links = await linkCodes(
    ctx,
    list.map((r) => r.linkId),
  )
  const tracking = await trackingOfCustomers(ctx, list)
  return {
    rows: list.map((r) => ({
      ...conversionView(r),
      link_code: r.linkId ? (links.get(r.linkId) ?? '') : '',
      tracking: tracking.get(r.customerId) ?? {},
    })),
    has_more,
    next_cursor,
  }
}

/** A page's cursor: none for the first page; one that is not a cursor of these lists is 400. */
function cursorOf(text: string | undefined) {
  if (!text) return null
  const c = decodeCursor(text)
  if (!c) throw invalid('cursor: not a next_cursor of this list')
  return c
}

/** The clicks behind the funnel's first number. */
export async function clicksPage(
  ctx: FunnelCtx,
  p: AffiliatePrincipal,
  period: Period,
  q: { cursor?: string; limit?: number },
) {
  const limit = q.limit ?? 50
  const source = ctx.clicks()
  const rows = source
    ? await source.list(p.brandId, p.affiliate.id, period.from, period.to, cursorOf(q.cursor), limit + 1)
    : []
  const page = rows.slice(0, limit)
  const links = await linkCodes(
    ctx,
    page.map((r) => r.link_id),
  )
  const last = page[page.length - 1]
  return {
    rows: page.map((r) => ({
      id: r.id,
      time: Math.floor(r.time / 1000),
      source: r.source,
      link_code: r.link_id ? (links.get(r.link_id) ?? '') : '',
      landing_path: r.landing_path,
      country: r.country,
      values: r.values,
      unique: r.unique,
      suspect: r.suspect,
    })),
    has_more: rows.length > limit,
    next_cursor: rows.length > limit ? encodeCursor({ time: last.time, id: last.id }) : null,
  }
}

async function linkCodes(ctx: AffiliateCtx, ids: (number | null)[]) {
  const want = [...new Set(ids.filter((x): x is number => x !== null))]
  if (want.length === 0) return new Map<number, string>()
  const rows = await ctx.db
    .select({ id: trackingLinks.id, code: trackingLinks.code })
    .from(trackingLinks)
    .where(inArray(trackingLinks.id, want))
  return new Map(rows.map((r) => [r.id, r.code]))
}

/** The affiliate's links on the brand, with the URL to share (on the brand's first API host). */
export async function myLinks(ctx: AffiliateCtx, p: AffiliatePrincipal) {
  const rows = await ctx.db
    .select()
    .from(trackingLinks)
    .where(and(eq(trackingLinks.brandId, p.brandId), eq(trackingLinks.affiliateId, p.affiliate.id)))
    .orderBy(desc(trackingLinks.id))
  return {
    rows: rows.map((l) => ({
      id: l.id,
      code: l.code,
      landing_path: l.landingPath,
      campaign: l.campaign,
      active: l.active === 1,
      path: `/go/${l.code}`,
    })),
  }
}
