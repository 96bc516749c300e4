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
 * Counts the calls made through `fetch` (the Worker's subrequests: the libSQL HTTP client, Upstash REST).
 * It counts the isolate's, not one invocation's: requests served by the same isolate meanwhile count too, so
 * a scheduled run may stop early (its jobs run a minute later), never late.
 */
export class FetchMeter {
  private calls = 0

  /** `fetch` that counts each call. */
  wrap(f: typeof fetch): typeof fetch {
    const counted = ((...args: Parameters<typeof fetch>) => {
      this.calls++
      return f(...args)
    }) as typeof fetch
    return counted
  }

  /** A budget counted from now. */
  budget(startBelow: number): CallBudget {
    const from = this.calls
    return { spent: () => this.calls - from, startBelow }
  }
}
