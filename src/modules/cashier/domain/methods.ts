/** A method as configured for a brand (major-unit limits; fee in basis points plus a fixed minor part). */
export interface MethodConfig {
  code: string
  provider: string
  title: string
  deposit: boolean
  withdrawal: boolean
  currencies: string[]
  countries: string[]
  minAmount: number
  maxAmount: number
  feeBps: number
  feeFixedMinor: number
  enabled: boolean
}

/**
 * The methods a customer's account may use, in this order of checks: the brand enabled it (or staff
 * enabled it for this customer), staff did not hide it from the customer, its provider is loaded and
 * configured for the brand, it serves the account currency and the customer's country, and the purpose.
 */
export function eligibleMethods(
  methods: MethodConfig[],
  who: {
    currency: string
    country: string
    overrides: Map<string, boolean>
    providerReady: (provider: string) => boolean
    purpose: 'deposit' | 'withdrawal'
  },
): MethodConfig[] {
  return methods.filter((m) => {
    const override = who.overrides.get(m.code)
    if (override === false || (!m.enabled && override !== true)) return false
    if (!who.providerReady(m.provider)) return false
    if (!m.currencies.includes(who.currency)) return false
    if (m.countries.length > 0 && !m.countries.includes(who.country)) return false
    return who.purpose === 'deposit' ? m.deposit : m.withdrawal
  })
}
