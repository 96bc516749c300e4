import { AsyncLocalStorage } from 'node:async_hooks'

/**
 * What a scheduler's call may still spend: at the edge a Worker invocation has 1,000 subrequests (every
 * statement to the database, every cache call), shared by every job due in it. `spent` reads how many the
 * call used so far; a job starts only while fewer than `startBelow` are spent, so the last one started
 * still has room for its own bounded run and no job is cut off inside a transaction (whose write lock the
 * database then holds until its own timeout).
 */
export interface CallBudget {
  spent(): number
  startBelow: number
}

/**
 * Counts the calls made through `fetch` (the Worker's subrequests: the libSQL HTTP client, Upstash REST)
 * within a call it runs (`run`): the fetches of that call's async work, not those of requests the same
 * isolate serves meanwhile (AsyncLocalStorage, which workerd offers under nodejs_compat).
 */
export class FetchMeter {
  private readonly scope = new AsyncLocalStorage<{ calls: number }>()

  /** `fetch` that counts each call made within a `run`. */
  wrap(f: typeof fetch): typeof fetch {
    const counted = ((...args: Parameters<typeof fetch>) => {
      const call = this.scope.getStore()
      if (call) call.calls++
      return f(...args)
    }) as typeof fetch
    return counted
  }

  /** Runs `fn` with a budget of the fetches it makes. */
  run<T>(startBelow: number, fn: (budget: CallBudget) => Promise<T>): Promise<T> {
    const call = { calls: 0 }
    return this.scope.run(call, () => fn({ spent: () => call.calls, startBelow }))
  }
}
