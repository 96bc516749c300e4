/**
 * Periodic work. `cluster` jobs run on one instance at a time (under a lease: Redis when configured, a
 * database row otherwise) and move to another when that one dies; `instance` jobs keep something of each
 * process current and run everywhere; `engine` jobs run only on the instance that holds the engine role
 * (they work on its in-memory books, or must follow one price path: the simulator). The same jobs run from the cron route
 * (POST /cron/{job}) for external schedulers and from the Workers `scheduled()` handler.
 */
export interface Job {
  /** Unique, `module.what` (the lease and the cron route use it). */
  name: string
  /** Period (ms): a cluster job runs at most once per period across instances. */
  every: number
  scope: 'cluster' | 'instance' | 'engine'
  /**
   * The lease of a cluster job, when not its name: a job whose work differs by where it runs (the uploads
   * sweep removes only its own store's files: disk on the Bun server, R2 at the edge) holds one per kind,
   * so the instance that renews one each period never keeps the other kind's work from running.
   */
  lease?: string
  run(at: { now: number }): Promise<unknown>
}

/** The name a cluster job's lease is held under. */
export const leaseOf = (job: Job) => job.lease ?? job.name
