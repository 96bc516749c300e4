import { z } from 'zod'
import { type Config, envFlag, moduleConfig } from '../../kernel/config'

/** The auth module's environment variables (README: configuration). */
export const AuthEnv = z
  .object({
    /** Read for the production rule below only (the kernel checks its values). */
    APP_ENV: z.string().optional(),
    /** Signs in to any trading account of any brand (support); refused in production unless allowed. */
    MASTER_PASSWORD: z.string().min(12).optional(),
    MASTER_PASSWORD_IN_PRODUCTION: envFlag.default(false),
    /** Registrations per client address an hour. */
    REGISTER_MAX_PER_HOUR: z.coerce.number().int().min(1).default(10),
  })
  .superRefine((e, issues) => {
    if (e.APP_ENV === 'production' && e.MASTER_PASSWORD && !e.MASTER_PASSWORD_IN_PRODUCTION)
      issues.addIssue({
        code: 'custom',
        path: ['MASTER_PASSWORD'],
        message: 'MASTER_PASSWORD is refused in production unless MASTER_PASSWORD_IN_PRODUCTION=true',
      })
  })

export interface AuthConfig {
  masterPassword?: string
  registerPerHour: number
}

/** The auth module's settings, read from the environment the kernel read its own from. */
export function authConfig(config: Config): AuthConfig {
  const e = moduleConfig(config, AuthEnv)
  return { masterPassword: e.MASTER_PASSWORD, registerPerHour: e.REGISTER_MAX_PER_HOUR }
}
