import { PrincipalsPort } from '../../kernel/kernel'
import { defineModule } from '../../kernel/module'
import { AccountsPort } from '../accounts'
import { AuthEnv, authConfig } from './config'
import type { AuthCtx } from './context'
import { seedDemoStaff } from './demo'
import { PASSWORD_CHANGE_REQUIRED, Principals } from './principals'
import { authRoutes } from './routes'
import * as schema from './schema'

export {
  type AttributionResolver,
  type RegistrationAttribution,
  RegistrationAttributionPort,
} from './service'

/** Sign-in of accounts, customers and staff; sign-out; registration; the staff table (README.md). */
export const authModule = defineModule({
  name: 'auth',
  tags: [{ name: 'Auth', description: 'Sign-in for accounts, customers and staff; sign-out; registration' }],
  confinements: [{ roles: ['SESSION_USER'], code: PASSWORD_CHANGE_REQUIRED }],
  env: AuthEnv,
  tables: schema,
  setup(k, ports) {
    const accounts = ports.get(AccountsPort)
    const principals = new Principals(accounts, k.db, k.store)
    const ctx: AuthCtx = { ...k, accounts, settings: authConfig(k.config), principals }
    ports.provide(PrincipalsPort, principals)
    return { routes: authRoutes(ctx), seedDemo: () => seedDemoStaff(ctx) }
  },
})

// its routes, for the type of the whole API (src/main/app-type.ts: Eden treaty)
export { authRoutes } from './routes'
