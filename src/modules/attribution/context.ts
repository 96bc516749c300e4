import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'
import type { AffiliateCodes, Cabinet } from '../affiliate'
import type { TouchSink } from './domain/touch'

/** What the attribution services work with. */
export interface AttributionCtx extends Kernel {
  accounts: AccountsApi
  codes: AffiliateCodes
  /** the affiliate cabinet's page, for `/` on an affiliate host */
  cabinet: Cabinet
  /** Where landing hits put their touches: a buffer on the server, a write per hit at the edge. */
  touchWriter: TouchSink
  /** The window a touch can win a registration in (ATTRIBUTION_WINDOW_DAYS). */
  windowMs: number
  /** ATTRIBUTION_TOUCH_RETENTION_DAYS: touches older are pruned, their clicks rolled up per day. */
  retentionDays: number
}
