import { Refusal } from '../refusal'

/** The one error type services throw; the app's onError maps it to `{ error, message? }`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message?: string,
    /** headers the answer carries (Retry-After of a 429) */
    readonly headers?: Record<string, string>,
  ) {
    super(message ?? code)
    this.hasMessage = message !== undefined
  }
  readonly hasMessage: boolean

  toBody(): { error: string; message?: string } {
    return this.hasMessage ? { error: this.code, message: this.message } : { error: this.code }
  }
}

export const invalid = (message: string) => new ApiError(400, 'INVALID_DATA', message)

/**
 * A schema's first problem (zod's issue) as `<field>: <message>`, `whole` naming a problem of the value
 * itself. An unknown key names itself: zod puts it beside the path of the object that holds it.
 */
export function issueText(
  issue: { path: readonly PropertyKey[]; message: string; code?: string; keys?: readonly string[] },
  whole = 'body',
) {
  if (issue.code === 'unrecognized_keys' && issue.keys?.length)
    return `${[...issue.path, issue.keys[0]].map(String).join('.')}: not allowed`
  return `${issue.path.map(String).join('.') || whole}: ${issue.message}`
}

/**
 * A refusal a client caused (a module's `Refusal`, or an HTTP-level `ApiError` such as INVALID_DATA), as
 * opposed to a fault: an idempotent repeat answers what its first request did, a port returns it as a result.
 */
export const isRefused = (e: unknown): e is Refusal | ApiError =>
  e instanceof Refusal || e instanceof ApiError
