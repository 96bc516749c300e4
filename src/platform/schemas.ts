import { t } from 'elysia'

/** Field schemas shared by several modules (spec part 8 limits). */
export const Login = t.Integer({ minimum: 0, description: 'Trading account login' })
export const Password = t.String({ minLength: 6, maxLength: 64, description: '6..64 characters' })
export const Ok = t.Object({ data: t.Literal('OK') })
