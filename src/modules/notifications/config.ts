import { z } from 'zod'
import { type Config, moduleConfig } from '../../kernel/config'

/** The notifications module's environment variables (README: configuration). */
export const NotificationsEnv = z.object({
  /** Days a notification is kept after it was written; older ones are removed by `notifications.prune`. */
  NOTIFICATIONS_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(90),
})

/** How long a notification is kept, in milliseconds. */
export const retentionMs = (config: Config) =>
  moduleConfig(config, NotificationsEnv).NOTIFICATIONS_RETENTION_DAYS * 86_400_000
