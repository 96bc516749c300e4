import type { Committer } from '../../kernel/db/group-commit'
import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'
import type { AffiliateCodes } from '../affiliate'
import type { NewTouch } from './service/touches'

/** What the attribution services work with. */
export interface AttributionCtx extends Kernel {
  accounts: AccountsApi
  codes: AffiliateCodes
  /** Touch inserts, committed together under load (group commit) or one by one (the edge). */
  touchWriter: Committer<NewTouch, number>
  /** The window a touch can win a registration in (ATTRIBUTION_WINDOW_DAYS). */
  windowMs: number
}
