import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'

/** What the notifications module works with. */
export interface NotificationsCtx extends Kernel {
  accounts: AccountsApi
}
