/** The cabinet's API on its own host: the session is an HttpOnly cookie, so requests carry no token. */
export class Unauthorized extends Error {}

interface Problem {
  error: string
  message?: string
}

export async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const res = await fetch(path, {
    method: init.method ?? 'GET',
    credentials: 'same-origin',
    headers: init.body === undefined ? {} : { 'content-type': 'application/json' },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  })
  const data = res.headers.get('content-type')?.includes('json') ? await res.json() : null
  if (res.status === 401 && !path.endsWith('/login')) throw new Unauthorized()
  if (!res.ok) {
    const p = (data ?? { error: `HTTP_${res.status}` }) as Problem
    throw new Error(p.message ?? p.error)
  }
  return data as T
}

type RangeName = 'today' | '7d' | '30d' | '90d' | 'mtd' | 'ytd' | 'custom'
export const RANGES: { value: RangeName; label: string }[] = [
  { value: 'today', label: 'Today' },
  { value: '7d', label: 'Last 7 days' },
  { value: '30d', label: 'Last 30 days' },
  { value: '90d', label: 'Last 90 days' },
  { value: 'mtd', label: 'Month to date' },
  { value: 'ytd', label: 'Year to date' },
  { value: 'custom', label: 'Custom…' },
]

export interface Me {
  id: number
  email: string
  code: string
  name: string
  brand: { id: number; name: string }
}

export interface Dashboard {
  range: string
  from: string
  to: string
  funnel: Record<
    | 'clicks'
    | 'unique_clicks'
    | 'registrations'
    | 'kyc_approvals'
    | 'first_deposits'
    | 'active_traders'
    | 'deposits'
    | 'reversals',
    number
  >
  deposit_volume: { currency: string; deposits: number; reversals: number; net: number }[]
  rates: Record<'registration' | 'kyc_approval' | 'first_deposit' | 'active_trader', number>
  series: { days: string[] } & Record<string, number[]>
}

export interface Page<R> {
  rows: R[]
  has_more: boolean
  next_cursor: string | null
}

export interface Money {
  currency: string
  amount: number
}

export interface Earnings {
  range: string
  from: string
  to: string
  by_kind: { kind: string; currency: string; amount: number; rows: number }[]
  totals: (Money & { rows: number })[]
  current_period: { period: string; status: 'open' | 'closed'; totals: (Money & { rows: number })[] }
}

interface ReportRow {
  key: string
  clicks: number
  unique_clicks: number
  registrations: number
  first_deposits: number
  deposit_volume: Money[]
  commissions: Money[]
}

export interface Report {
  range: string
  from: string
  to: string
  dimension: string
  rows: ReportRow[]
  totals: Omit<ReportRow, 'key'>
}

export interface Statement {
  id: number
  period: string
  status: 'pending' | 'approved' | 'paid'
  totals: (Money & { rows: number })[]
  rows: number
  created_time: number
  approved_time: number | null
  paid_time: number | null
  payment_reference: string
}

export interface Commission {
  id: number
  customer_id: number
  kind: string
  amount: number
  currency: string
  basis: number
  rate: number
  volume_lots: number
  period: string
  corrects: string
  plan_id: number
  plan_version: number
  event_time: number
  facts: number[]
}

/** Money as the cabinet shows it: `1,234.50 USD`. */
export const money = (m: Money) =>
  `${m.amount.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 8 })} ${m.currency}`
