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
