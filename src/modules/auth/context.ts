import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'

/** What the auth module's services work with. */
export interface AuthCtx extends Kernel {
  accounts: AccountsApi
}
