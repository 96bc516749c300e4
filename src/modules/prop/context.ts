import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'
import type { PurchaseSteps } from './steps'

/** What the prop services work with. */
export interface PropCtx extends Kernel {
  accounts: AccountsApi
  /** The steps of a purchase (steps.ts); a test replaces one to make it fail. */
  steps: PurchaseSteps
}
