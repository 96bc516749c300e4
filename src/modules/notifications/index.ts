import { defineModule } from '../../kernel/module'
import { AccountsPort } from '../accounts'
import { notificationConsumers } from './consumers'
import type { NotificationsCtx } from './context'
import { notificationRoutes } from './routes'
import * as schema from './schema'

/** Notifications of an account login: written by consumers of trading and alert events (README.md). */
export const notificationsModule = defineModule({
  name: 'notifications',
  tags: [
    {
      name: 'Notifications',
      description: 'Notifications of an account login; staff messages and broadcasts',
    },
  ],
  tables: schema,
  setup(k, ports) {
    const ctx: NotificationsCtx = { ...k, accounts: ports.get(AccountsPort) }
    return { routes: notificationRoutes(ctx), consumers: notificationConsumers() }
  },
})

// its routes, for the type of the whole API (src/main/app-type.ts: Eden treaty)
export { notificationRoutes } from './routes'
