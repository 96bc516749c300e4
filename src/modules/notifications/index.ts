import { defineModule } from '../../kernel/module'
import { AccountsPort } from '../accounts'
import { NotificationsEnv, retentionMs } from './config'
import { notificationConsumers } from './consumers'
import type { NotificationsCtx } from './context'
import { pruneNotifications } from './prune'
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
  env: NotificationsEnv,
  setup(k, ports) {
    const ctx: NotificationsCtx = { ...k, accounts: ports.get(AccountsPort) }
    const keepMs = retentionMs(k.config)
    return {
      routes: notificationRoutes(ctx),
      consumers: notificationConsumers(),
      // a repeat alert writes one a minute: without an end the table grows for good
      jobs: [
        {
          name: 'notifications.prune',
          every: 900_000,
          scope: 'cluster',
          run: ({ now }) => pruneNotifications(k, now, keepMs),
        },
      ],
    }
  },
})

// its routes, for the type of the whole API (src/main/app-type.ts: Eden treaty)
export { notificationRoutes } from './routes'
