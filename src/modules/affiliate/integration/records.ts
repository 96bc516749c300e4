import { and, eq, inArray } from 'drizzle-orm'
import type { AffiliatePrincipal } from '../cabinet/tokens'
import type { AffiliateCtx } from '../context'
import { decodeCursor, PAGE_DEFAULT, PAGE_MAX } from '../domain/cursor'
import { parseDate } from '../domain/range'
import { refuse } from '../errors'
import { conversions, trackingLinks } from '../schema'
import { conversionPage } from '../service/conversion-pages'
import { type CommissionRowKind, commissionPage } from '../service/reports'
import { conversionView } from '../views'

const DAY = 86_400_000

export interface PageQuery {
  cursor?: string
  page_size?: number
  from?: string
  to?: string
}

/** Page size, cursor and dates of a request, or a 400 naming the parameter (never a silent cut). */
function pageOf(q: PageQuery) {
  const size = q.page_size ?? PAGE_DEFAULT
  if (size > PAGE_MAX) throw refuse('INVALID_DATA', `page_size: at most ${PAGE_MAX}`)
  const cursor = q.cursor ? decodeCursor(q.cursor) : null
  if (q.cursor && !cursor) throw refuse('INVALID_DATA', 'cursor: not a cursor of this API')
  const day = (name: 'from' | 'to') => {
    const v = q[name]
    if (v === undefined) return null
    // a date that does not exist (2026-02-30) is refused, not rolled over into the next month
    const ms = parseDate(v)
    if (ms === null) throw refuse('INVALID_DATA', `${name}: a date YYYY-MM-DD`)
    return ms
  }
  const from = day('from')
  const to = day('to')
  // as the cabinet's reports answer it (domain/range.ts), not an empty page
  if (from !== null && to !== null && to < from) throw refuse('INVALID_DATA', 'to: on or after from')
  return { size, cursor, from, to: to === null ? null : to + DAY }
}

const secs = (ms: number | undefined) => (ms === undefined ? null : Math.floor(ms / 1000))

/**
 * GET /api/affiliate/v1/customers: the customers the affiliate referred on the brand, newest
 * registration first, with their funnel milestones. What a partner may see, as brokers share it: the
 * customer id, country and the attribution values it brought; never a name, email, phone or address.
 */
export async function referredCustomers(ctx: AffiliateCtx, p: AffiliatePrincipal, query: PageQuery) {
  const q = pageOf(query)
  const { list, has_more, next_cursor } = await conversionPage(
    ctx,
    { brandId: p.brandId, affiliateId: p.affiliate.id, from: q.from, to: q.to, kinds: ['registration'] },
    q.cursor,
    q.size,
  )
  const ids = list.map((r) => r.customerId)
  const milestones = ids.length
    ? await ctx.db
        .select()
        .from(conversions)
        .where(
          and(
            eq(conversions.affiliateId, p.affiliate.id),
            inArray(conversions.customerId, ids),
            inArray(conversions.kind, ['kyc_approval', 'first_deposit', 'active_trader']),
          ),
        )
    : []
  const of = new Map<string, (typeof milestones)[number]>()
  for (const m of milestones) of.set(`${m.customerId}:${m.kind}`, m)
  const linkIds = [...new Set(list.map((r) => r.linkId).filter((x): x is number => x !== null))]
  const links = new Map(
    (linkIds.length
      ? await ctx.db.select().from(trackingLinks).where(inArray(trackingLinks.id, linkIds))
      : []
    ).map((l) => [l.id, l.code]),
  )
  // the page's customers in one read (their country, and the attribution they were registered with), not a
  // read per row (at the edge each one is a subrequest of the request's 1,000: a page of 500 went past them)
  const customersOf = await ctx.accounts.read.customersIn(p.brandId, ids)
  const attributions = ctx.attributions()
  const rows = list.map((r) => {
    const c = customersOf.get(r.customerId)
    const a = (c && attributions?.ofRecord(c)?.values) ?? {}
    const ftd = of.get(`${r.customerId}:first_deposit`)
    return {
      customer_id: r.customerId,
      registered_time: secs(r.eventTime),
      country: c?.country ?? '',
      link_id: r.linkId,
      link_code: r.linkId ? (links.get(r.linkId) ?? '') : '',
      campaign: a.campaign ?? '',
      utm_source: a.utm_source ?? '',
      utm_medium: a.utm_medium ?? '',
      utm_campaign: a.utm_campaign ?? '',
      sub1: a.sub1 ?? '',
      sub2: a.sub2 ?? '',
      sub3: a.sub3 ?? '',
      sub4: a.sub4 ?? '',
      sub5: a.sub5 ?? '',
      click_id: a.click_id ?? '',
      kyc_approved_time: secs(of.get(`${r.customerId}:kyc_approval`)?.eventTime),
      first_deposit_time: secs(ftd?.eventTime),
      first_deposit_amount: ftd ? conversionView(ftd).value : null,
      first_deposit_currency: ftd?.currency ?? '',
      active_trader_time: secs(of.get(`${r.customerId}:active_trader`)?.eventTime),
    }
  })
  return { rows, has_more, next_cursor }
}

/**
 * GET /api/affiliate/v1/transactions: the financial transactions of the affiliate's referred customers on
 * the brand (credited deposits, and refunds or chargebacks of them), newest first.
 */
export async function referredTransactions(
  ctx: AffiliateCtx,
  p: AffiliatePrincipal,
  query: PageQuery & { type?: 'deposit' | 'reversal'; customer_id?: number },
) {
  const q = pageOf(query)
  const kinds =
    query.type === 'deposit'
      ? ['deposit']
      : query.type === 'reversal'
        ? ['deposit_reversal']
        : ['deposit', 'deposit_reversal']
  const { list, has_more, next_cursor } = await conversionPage(
    ctx,
    {
      brandId: p.brandId,
      affiliateId: p.affiliate.id,
      from: q.from,
      to: q.to,
      kinds,
      customerId: query.customer_id,
    },
    q.cursor,
    q.size,
  )
  return {
    rows: list.map((r) => {
      const v = conversionView(r)
      return {
        id: r.id,
        transaction_id: r.referenceId,
        customer_id: r.customerId,
        type: r.kind === 'deposit' ? 'deposit' : 'reversal',
        amount: v.value,
        currency: r.currency,
        time: v.event_time,
      }
    }),
    has_more,
    next_cursor,
  }
}

/** The affiliate's commission rows (issue 44), newest first by (event time, id); a period or the days. */
export async function referredCommissions(
  ctx: AffiliateCtx,
  p: AffiliatePrincipal,
  query: PageQuery & { period?: string; kind?: CommissionRowKind },
) {
  const q = pageOf(query)
  return commissionPage(
    ctx,
    {
      brandId: p.brandId,
      affiliateId: p.affiliate.id,
      period: query.period,
      from: q.from ?? undefined,
      to: q.to ?? undefined,
      kind: query.kind,
    },
    q.cursor,
    q.size,
  )
}
