/**
 * One run of a load at a time, joined by the callers that want it while it runs (the reload of what an
 * instance keeps in memory: reference data, brands, quotes), when `shared`.
 *
 * Never shared at the edge. workerd ties a promise to the request that made it: a request awaiting
 * another's load is cut off when that one ends, and a load whose request ended while it ran (a quote
 * stream whose client left) never settles, so a promise kept here would fail every later caller for the
 * isolate's life ("This promise was created by a request that has since ended, so it can never settle").
 * There each caller runs its own load; what a load brings is kept as plain values, never as a promise.
 */
export class SingleFlight<T = void> {
  private running: Promise<T> | null = null

  constructor(private readonly shared: boolean) {}

  /** Whether a shared run is under way (never at the edge). */
  get busy(): boolean {
    return this.running !== null
  }

  run(load: () => Promise<T>): Promise<T> {
    if (!this.shared) return load()
    if (this.running) return this.running
    const mine = load().finally(() => {
      if (this.running === mine) this.running = null
    })
    this.running = mine
    return mine
  }
}
