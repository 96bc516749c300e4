import { defineModule } from '../../kernel/module'
import { AccountsPort } from '../accounts'
import type { ScriptsCtx } from './context'
import { scriptRoutes } from './routes'
import * as schema from './schema'

/** User scripts of an account login (README.md of this folder). */
export const scriptsModule = defineModule({
  name: 'scripts',
  tags: [{ name: 'Scripts', description: 'User scripts of an account login' }],
  tables: schema,
  setup(k, ports) {
    const ctx: ScriptsCtx = { ...k, accounts: ports.get(AccountsPort) }
    return { routes: scriptRoutes(ctx) }
  },
})

// its routes, for the type of the whole API (src/main/app-type.ts: Eden treaty)
export { scriptRoutes } from './routes'
