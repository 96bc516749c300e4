import type { ReferenceData } from './reference'

/**
 * Why an account currency cannot be used on this deployment, or null (accounts' CurrencyUsePort). Profits
 * and margins reach an account currency by the direct pair, the inverse pair, or through USD
 * (domain/conversion.ts): a currency other than USD needs a symbol pairing it with USD, else nothing a
 * group of it trades could be valued. Read from the symbols as this instance holds them (within a second
 * of a change: reference.ts).
 */
export async function currencyUse(refdata: ReferenceData, currency: string): Promise<string | null> {
  if (currency === 'USD') return null
  await refdata.fresh()
  if (refdata.symbol(`${currency}USD`) || refdata.symbol(`USD${currency}`)) return null
  return `no symbol converts ${currency}: add ${currency}USD or USD${currency} (POST /manager/symbols) first`
}
