/**
 * The conversion rules of spec 4.17 as a pure function of what happened to one referred customer.
 *
 * 1. Registration, KYC approval, first deposit and active trader exist at most once per customer; the row
 *    keeps the first occurrence (by event time, then event id).
 * 2. A filled field of such a row is never replaced; a later event of the same kind fills only empty
 *    fields (a null value, an empty currency or reference).
 * 3. One Deposit row per cashier transaction; the funnel's deposit volume is their sum. A refund or a
 *    chargeback of a credited deposit is its own row, `deposit_reversal`, keyed by the same transaction,
 *    with the amount taken back as a negative value: net volume = deposits + reversals.
 * 4. First deposit = the earliest credited deposit (value and reference_id of that transaction).
 *
 * Active trader: the closed lots of the customer's trades, summed in time order, reach the brand's
 * threshold (`activeTraderCentilots`; 0 = the first closed trade). The row's value is the lots summed
 * when it was reached, its reference the ticket that reached it.
 *
 * Facts arrive in any order and more than once; the rows are always `derive(facts sorted by time)`, which
 * is what a replay of the events in time order gives.
 */

/**
 * `bonus`: a bonus credited (or taken back, negative) to a real account; RevShare takes it off revenue.
 * `withdrawal`: a withdrawal paid; net-deposit RevShare takes it off.
 */
type FactKind = 'registration' | 'kyc' | 'deposit' | 'reversal' | 'trade' | 'bonus' | 'withdrawal'
export const CONVERSION_KINDS = [
  'registration',
  'kyc_approval',
  'first_deposit',
  'active_trader',
  'deposit',
  'deposit_reversal',
] as const
export type ConversionKind = (typeof CONVERSION_KINDS)[number]

export interface Fact {
  kind: FactKind
  /** cashier transaction id, ticket, customer id, balance operation id */
  reference: string
  /** deposits, withdrawals: the amount; trades on a real account: the commission and swap the customer
   *  paid (the broker's revenue); bonuses: the amount credited */
  valueMinor: number | null
  /** the money's currency; a trade's account currency on a real account, '' on a demo one */
  currency: string
  /** trades: closed hundredths of a lot */
  volume: number
  eventId: number
  eventTime: number
}

interface ConversionRow {
  kind: ConversionKind
  key: string
  valueMinor: number | null
  currency: string
  referenceId: string
  eventTime: number
  eventId: number
}

interface Rules {
  activeTraderCentilots: number
}

const byTime = (a: Fact, b: Fact) => a.eventTime - b.eventTime || a.eventId - b.eventId

const rowOf = (kind: ConversionKind, key: string, f: Fact, valueMinor = f.valueMinor): ConversionRow => ({
  kind,
  key,
  valueMinor,
  currency: f.currency,
  referenceId: f.reference,
  eventTime: f.eventTime,
  eventId: f.eventId,
})

/** Rule 2: a later event fills only what is still empty. */
function fill(row: ConversionRow, later: ConversionRow) {
  if (row.valueMinor === null) row.valueMinor = later.valueMinor
  if (row.currency === '') row.currency = later.currency
  if (row.referenceId === '') row.referenceId = later.referenceId
}

export function deriveConversions(facts: readonly Fact[], rules: Rules): ConversionRow[] {
  const rows = new Map<string, ConversionRow>()
  const put = (r: ConversionRow) => {
    const have = rows.get(r.key)
    if (have) fill(have, r)
    else rows.set(r.key, r)
  }
  let lots = 0
  let active = false
  // a ticket closes once: the same close reported twice counts once
  const tickets = new Set<string>()
  for (const f of [...facts].sort(byTime)) {
    switch (f.kind) {
      case 'registration':
        put(rowOf('registration', 'registration', f))
        break
      case 'kyc':
        put(rowOf('kyc_approval', 'kyc_approval', f))
        break
      case 'deposit':
        put(rowOf('first_deposit', 'first_deposit', f))
        put(rowOf('deposit', `deposit:${f.reference}`, f))
        break
      case 'reversal':
        put(rowOf('deposit_reversal', `deposit_reversal:${f.reference}`, f, -Math.abs(f.valueMinor ?? 0)))
        break
      case 'trade':
        // a demo account's trades (a fact without a currency) make no active trader: no money was at stake
        if (active || f.currency === '' || tickets.has(f.reference)) break
        tickets.add(f.reference)
        lots += f.volume
        if (lots >= Math.max(1, rules.activeTraderCentilots)) {
          active = true
          put({ ...rowOf('active_trader', 'active_trader', f, lots), currency: '' })
        }
        break
    }
  }
  return [...rows.values()]
}

/** Whether a stored row differs from what the facts derive (a correction is due). */
export const rowChanged = (
  stored: Pick<ConversionRow, 'valueMinor' | 'currency' | 'referenceId' | 'eventTime' | 'eventId'>,
  derived: ConversionRow,
) =>
  stored.valueMinor !== derived.valueMinor ||
  stored.currency !== derived.currency ||
  stored.referenceId !== derived.referenceId ||
  stored.eventTime !== derived.eventTime ||
  stored.eventId !== derived.eventId

const notAfter = (a: { eventTime: number; eventId: number }, b: { eventTime: number; eventId: number }) =>
  a.eventTime - b.eventTime || a.eventId - b.eventId

/**
 * Whether a stored row may be corrected to what the facts derive when `fact` is recorded (rules 1-2). The
 * active trader row is derived with the brand's threshold as set today: once written, it keeps its first
 * occurrence whatever the threshold is changed to later. Only a trade that arrived late, dated at or before
 * it, moves it, and only to an earlier trade or to more lots at the same one (what a replay in time order
 * gives: a trade added before it only brings the threshold sooner). That move is derived at today's
 * threshold: the one the row was made with is stored nowhere (neither the row nor its fact has a column for
 * it), and a row and its facts cannot tell it apart from today's, so a late trade after a change of the
 * threshold moves the row as today's threshold places it. The other rows depend on facts alone: a late fact
 * corrects them to the replay in time order (ADR 0017).
 */
export function mayCorrect(
  stored: Pick<ConversionRow, 'eventTime' | 'eventId'>,
  derived: ConversionRow,
  fact: Pick<Fact, 'kind' | 'eventTime' | 'eventId'>,
) {
  if (derived.kind !== 'active_trader') return true
  return fact.kind === 'trade' && notAfter(fact, stored) <= 0 && notAfter(derived, stored) <= 0
}
