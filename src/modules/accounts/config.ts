import { z } from 'zod'
import { type Config, moduleConfig } from '../../kernel/config'

/** The accounts module's environment variables (README: configuration). */
export const AccountsEnv = z.object({
  /** Accounts a customer, and a client address, may open a day. */
  ACCOUNT_OPEN_MAX_PER_DAY: z.coerce.number().int().min(1).default(10),
})

export interface AccountsConfig {
  opensPerDay: number
}

/** The accounts module's settings, read from the environment the kernel read its own from. */
export function accountsConfig(config: Config): AccountsConfig {
  return { opensPerDay: moduleConfig(config, AccountsEnv).ACCOUNT_OPEN_MAX_PER_DAY }
}
