import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'

/** What the scripts module works with. */
export interface ScriptsCtx extends Kernel {
  accounts: AccountsApi
}
