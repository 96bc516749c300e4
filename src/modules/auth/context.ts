import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'
import type { AuthConfig } from './config'
import type { Principals } from './principals'

/** What the auth module's services work with. */
export interface AuthCtx extends Kernel {
  accounts: AccountsApi
  settings: AuthConfig
  /** The records behind sessions (their cache is invalidated here when a staff member's sessions end). */
  principals: Principals
}
