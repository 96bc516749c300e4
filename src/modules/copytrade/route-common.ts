import { ANY_SESSION } from '../../kernel/auth/session'
import { errors } from '../../kernel/http/openapi'
import { Id, Login } from '../../kernel/http/schemas'
import { type CopyCode, codesOf } from './service/errors'

/** What the copy trading routes share: who may call them, their tags and error tables. */
export const CUSTOMER = {
  roles: ['SESSION_CUSTOMER'] as const,
  denied: { status: 403, code: 'INVALID_CUSTOMER_SESSION' },
}
export const ANY = { roles: ANY_SESSION }
export const STAFF = { roles: ['SESSION_MANAGER', 'SESSION_ADMIN'] as const }
export const TAG = 'Copy trading'
export const STAFF_TAG = 'Copy trading back office'
export const err = (...codes: CopyCode[]) => errors(codesOf(...codes))
export const owner = (brand: { id: number }, session: { customerId?: number }) => ({
  brandId: brand.id,
  customerId: session.customerId!,
})
export const IdParam = (what: string, example = 1) => ({ id: Id(`${what} id`, example) })
export const LoginParam = { login: Login }
