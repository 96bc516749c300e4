import { describe, expect, test } from 'bun:test'
import { loadConfig } from '../../kernel/config'
import { AuthEnv, authConfig } from './config'

const SECRET = 'q7Vt2pX9LmRz4sKw8NcYb3HdJf6GaE1uTo5iPnQx'
const auth = [{ env: AuthEnv }]

describe('the auth module settings', () => {
  test('defaults, read from the environment the kernel read', () => {
    expect(authConfig(loadConfig({}, auth))).toEqual({ masterPassword: undefined, registerPerHour: 10 })
    const c = loadConfig({ MASTER_PASSWORD: 'master-password-1', REGISTER_MAX_PER_HOUR: '3' }, auth)
    expect(authConfig(c)).toEqual({ masterPassword: 'master-password-1', registerPerHour: 3 })
  })

  test('production refuses MASTER_PASSWORD unless MASTER_PASSWORD_IN_PRODUCTION', () => {
    const env = { APP_ENV: 'production', JWT_SECRET: SECRET, MASTER_PASSWORD: 'master-password-1' }
    expect(() => loadConfig(env, auth)).toThrow(/MASTER_PASSWORD: MASTER_PASSWORD is refused in production/)
    // a caller that did not check the modules' variables meets the same error when the module reads them
    expect(() => authConfig(loadConfig(env))).toThrow(/MASTER_PASSWORD/)
    const allowed = loadConfig({ ...env, MASTER_PASSWORD_IN_PRODUCTION: 'true' }, auth)
    expect(authConfig(allowed).masterPassword).toBe('master-password-1')
  })

  test("one check names the kernel's invalid variables and the module's together", () => {
    expect(() =>
      loadConfig({ PORT: 'abc', REGISTER_MAX_PER_HOUR: '0', MASTER_PASSWORD: 'short' }, auth),
    ).toThrow(/Invalid configuration:\n {2}PORT: .*\n {2}MASTER_PASSWORD: .*\n {2}REGISTER_MAX_PER_HOUR: /)
  })
})
