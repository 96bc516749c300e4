import { type IntegerOptions, Type } from '@sinclair/typebox'
import { t } from 'elysia'

/**
 * A JSON integer, for request bodies and responses: TypeBox's own schema. Elysia's `t.Integer` also
 * accepts numeric strings through a transform, so every body holding one went through TypeBox's Decode
 * pass (a copy of the body, 2-3% of a trade open's CPU), a body `{"login": "5"}` passed, and the
 * document showed `anyOf [string, integer]`.
 */
export const Int = (options?: IntegerOptions) => Type.Integer(options)
/** An integer in the query string or the path, which arrive as text: Elysia's coercing `t.Integer`. */
export const QueryInt = (options?: IntegerOptions) => t.Integer(options)

/** Field schemas shared by several modules (spec part 8 limits). */
const LOGIN = { minimum: 0, description: 'Trading account login' }
export const Login = Int(LOGIN)
export const LoginQuery = QueryInt(LOGIN)
export const Password = t.String({ minLength: 6, maxLength: 64, description: '6..64 characters' })
export const Ok = t.Object({ data: t.Literal('OK') })
