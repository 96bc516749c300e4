import { Elysia } from 'elysia'
import { healthRoutes } from '../kernel/http/health'
import { kernelRoutes } from '../kernel/http/kernel-routes'
import { accountManagerRoutes, accountRoutes } from '../modules/accounts'
import { affiliateStaffRoutes, cabinetRoutes, integrationRoutes } from '../modules/affiliate'
import { alertRoutes } from '../modules/alerts'
import { attributionRoutes } from '../modules/attribution'
import { authRoutes } from '../modules/auth'
import { cashierManagerRoutes, cashierRoutes, sandboxRoutes } from '../modules/cashier'
import { copyRoutes, copyStaffRoutes } from '../modules/copytrade'
import { kycRoutes } from '../modules/kyc'
import { marketAdminRoutes, marketRoutes } from '../modules/market'
import { notificationRoutes } from '../modules/notifications'
import { propManagerRoutes, propRoutes } from '../modules/prop'
import { scriptRoutes } from '../modules/scripts'
import { tradingRoutes } from '../modules/trading'
import { uploadRoutes } from '../modules/uploads'

/**
 * Every route of the service as one Elysia type, for Eden treaty (`treaty<App>(url)`): the app itself is
 * composed at run time from the module list, which erases its route types. Never called: it only gives
 * the type its shape (README, "Typed client").
 */
function routes() {
  const c = null as never
  return new Elysia()
    .use(healthRoutes(c))
    .use(kernelRoutes(c, c))
    .use(accountRoutes(c))
    .use(accountManagerRoutes(c))
    .use(authRoutes(c))
    .use(uploadRoutes(c))
    .use(marketRoutes(c))
    .use(marketAdminRoutes(c))
    .use(tradingRoutes(c))
    .use(alertRoutes(c))
    .use(notificationRoutes(c))
    .use(scriptRoutes(c))
    .use(kycRoutes(c))
    .use(cashierRoutes(c))
    .use(cashierManagerRoutes(c))
    .use(sandboxRoutes(c, c))
    .use(propRoutes(c))
    .use(propManagerRoutes(c))
    .use(copyRoutes(c))
    .use(copyStaffRoutes(c))
    .use(affiliateStaffRoutes(c, c))
    .use(cabinetRoutes(c, c))
    .use(integrationRoutes(c, c))
    .use(attributionRoutes(c))
}

export type App = ReturnType<typeof routes>
