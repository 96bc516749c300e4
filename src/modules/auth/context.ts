import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'
import type { AuthConfig } from './config'

/** What the auth module's services work with. */
export interface AuthCtx extends Kernel {
  accounts: AccountsApi
  settings: AuthConfig
}
