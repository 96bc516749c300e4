import { t } from 'elysia'
import { Int, OneOf } from '../../kernel/http/schemas'
import { COMMISSION_KINDS, REPORT_DIMENSIONS } from './service/reports'

/** The schemas of reports, earnings, commission rows and statements (cabinet and staff routes). */
const Money = t.Object(
  { currency: t.String(), amount: t.Number({ description: "in the currency's units" }) },
  { title: 'AffiliateMoney' },
)
const Figures = {
  clicks: Int({ description: 'visits with its code or links (bots left out), raw' }),
  unique_clicks: Int({ description: 'the first of a visitor on a link within the hour, not suspect' }),
  registrations: Int(),
  first_deposits: Int(),
  deposit_volume: t.Array(Money, { description: 'the deposit rows, per currency' }),
  commissions: t.Array(Money, { description: 'the commission rows by event time, per currency' }),
}

export const Dimension = OneOf(REPORT_DIMENSIONS, {
  description:
    'group by: day (UTC), link, sub1..sub5 (the tracker values), country, landing (the landing page)',
  example: 'sub1',
})

export const ReportModel = t.Object(
  {
    range: t.String(),
    from: t.String({ description: 'first day (UTC)' }),
    to: t.String({ description: 'last day (UTC)' }),
    dimension: t.String(),
    rows: t.Array(
      t.Object(
        {
          key: t.String({
            description:
              "the group: YYYY-MM-DD, a link code, the sub-id, the country (ISO 3166-1 alpha-2) or the landing path; '' when the row had none (a period's tier or sub-affiliate row has no customer)",
          }),
          ...Figures,
        },
        { title: 'AffiliateReportRow' },
      ),
    ),
    totals: t.Object(Figures, { title: 'AffiliateReportTotals' }),
  },
  {
    title: 'AffiliateReport',
    description:
      'Conversions and commissions are grouped by their referred customer (by day: their own day); clicks by what the click carried. By day, clicks include the daily totals of pruned touches; by any other dimension only the touches still kept.',
  },
)

/** What format=csv answers (Content-Type text/csv, Content-Disposition attachment). */
const CsvText = (columns: string) =>
  t.String({ description: `format=csv: the table as text/csv (a header row; ${columns})` })
export const REPORT_CSV = CsvText(
  'one column per currency amount such as `deposit_volume_USD`; a last row `total`',
)
export const COMMISSIONS_CSV = CsvText('one commission row a line, every row of the filter')

export const CommissionKind = OneOf(COMMISSION_KINDS, { description: 'one kind only' })

const CurrencyTotal = t.Object(
  {
    currency: t.String(),
    amount: t.Number(),
    amount_minor: Int({ description: 'integer minor units' }),
    rows: Int({ description: 'commission rows' }),
  },
  { title: 'AffiliateCurrencyTotal' },
)

export const EarningsModel = t.Object(
  {
    range: t.String(),
    from: t.String({ description: 'first day (UTC)' }),
    to: t.String({ description: 'last day (UTC)' }),
    by_kind: t.Array(
      t.Object(
        { kind: t.String(), currency: t.String(), amount: t.Number(), rows: Int() },
        { title: 'AffiliateEarningsByKind' },
      ),
    ),
    totals: t.Array(CurrencyTotal),
    current_period: t.Object(
      {
        period: t.String({ description: 'YYYY-MM (UTC)' }),
        status: OneOf(['open', 'closed'], { description: 'closed once staff closed the period' }),
        totals: t.Array(CurrencyTotal, { description: 'its rows so far, per currency' }),
      },
      { title: 'AffiliateCurrentPeriod' },
    ),
  },
  { title: 'AffiliateEarnings' },
)

export const CommissionRowModel = t.Object(
  {
    id: Int(),
    affiliate_id: Int({ description: 'whom it pays' }),
    customer_id: Int({ description: "the referred customer; 0 for a period's tier or sub-affiliate row" }),
    source_affiliate_id: Int({
      description: 'sub_affiliate: the recruited affiliate whose earnings it shares; 0 otherwise',
    }),
    key: t.String({
      description:
        'what it derives from (unique per period): c<customer>:cpa, c<customer>:rev:trade:<ticket>, tier:…, sub:…',
    }),
    kind: t.String({ enum: [...COMMISSION_KINDS], description: 'commission kind' } as never),
    amount: t.Number({ description: "in the currency's units (reversals negative)" }),
    amount_minor: Int({ description: 'the same in integer minor units' }),
    currency: t.String(),
    basis: t.Number({ description: 'what the rate applied to; the CPA amount for a CPA' }),
    rate: t.Number({ description: 'percent (0 for a CPA)' }),
    volume_lots: t.Number({ description: 'closed lots (trading revenue rows)' }),
    period: t.String({ description: 'YYYY-MM the row is paid in' }),
    corrects: t.String({ description: "the closed period it corrects; '' otherwise" }),
    plan_id: Int(),
    plan_version: Int(),
    event_time: Int({ description: 'epoch seconds' }),
    facts: t.Array(Int(), { description: 'the conversion facts it derives from' }),
  },
  { title: 'AffiliateCommission' },
)

export const StatementModel = t.Object(
  {
    id: Int(),
    affiliate_id: Int(),
    period: t.String({ description: 'YYYY-MM (UTC)' }),
    status: OneOf(['pending', 'approved', 'paid'], { description: 'pending until staff approve it' }),
    totals: t.Array(CurrencyTotal),
    rows: Int({ description: 'commission rows' }),
    created_time: Int({ description: 'epoch seconds' }),
    approved_time: t.Union([Int(), t.Null()]),
    paid_time: t.Union([Int(), t.Null()]),
    payment_reference: t.String(),
  },
  { title: 'AffiliateStatement' },
)
