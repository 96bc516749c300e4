import type { ModuleDefinition } from '../kernel/module'
import { accountsModule } from '../modules/accounts'
import { affiliateModule } from '../modules/affiliate'
import { alertsModule } from '../modules/alerts'
import { attributionModule } from '../modules/attribution'
import { authModule } from '../modules/auth'
import { cashierModule } from '../modules/cashier'
import { copytradeModule } from '../modules/copytrade'
import { kycModule } from '../modules/kyc'
import { marketModule } from '../modules/market'
import { notificationsModule } from '../modules/notifications'
import { propModule } from '../modules/prop'
import { scriptsModule } from '../modules/scripts'
import { tradingModule } from '../modules/trading'
import { uploadsModule } from '../modules/uploads'

/**
 * The modules of this deployment, in dependency order: a module takes the ports of the modules before it
 * (docs/architecture.md). A new module is one more line here and a folder under src/modules.
 */
export const MODULES: readonly ModuleDefinition[] = [
  uploadsModule,
  accountsModule,
  authModule,
  marketModule,
  tradingModule,
  alertsModule,
  notificationsModule,
  scriptsModule,
  kycModule,
  cashierModule,
  propModule,
  copytradeModule,
  affiliateModule,
  attributionModule,
]
