import type { KeyValueStore } from '../cache'
import type { LeaseAnswer } from '../cache/store'
import type { Clock } from '../clock'
import type { Db } from '../db/client'

/** Who holds a named lease: taken when free, renewed by its holder, lost when not renewed in time. */
export interface Leases {
  /**
   * Takes or renews `name` for `owner` for `ttlMs`. When another owner holds it, says how long that
   * lease has left (the waiting runner tries again then).
   */
  hold(name: string, owner: string, ttlMs: number): Promise<LeaseAnswer>
  release(name: string, owner: string): Promise<void>
  /** Who holds `name` now (null when nobody does). */
  holder(name: string): Promise<string | null>
}

/** Leases in the shared cache (Redis or Upstash): `SET NX PX`, renewed with a compare-and-expire. */
export class StoreLeases implements Leases {
  constructor(private readonly store: KeyValueStore) {}
  hold(name: string, owner: string, ttlMs: number) {
    return this.store.lease(`lease:${name}`, owner, ttlMs)
  }
  release(name: string, owner: string) {
    return this.store.unlease(`lease:${name}`, owner)
  }
  holder(name: string) {
    return this.store.get(`lease:${name}`)
  }
}

/** Leases as rows of `job_leases` (one conditional upsert), for deployments without a shared cache. */
export class DbLeases implements Leases {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  async hold(name: string, owner: string, ttlMs: number): Promise<LeaseAnswer> {
    const now = this.clock.now()
    return this.db.transaction(async (tx) => {
      const taken = await tx.execute({
        sql: `insert into job_leases (name, owner, until) values (?, ?, ?)
              on conflict (name) do update set owner = excluded.owner, until = excluded.until
              where job_leases.until <= ? or job_leases.owner = excluded.owner
              returning owner`,
        args: [name, owner, now + ttlMs, now],
      })
      if (taken.rows.length === 1) return { held: true }
      const other = await tx.execute({ sql: 'select until from job_leases where name = ?', args: [name] })
      return { held: false, freeInMs: Math.max(0, Number(other.rows[0]?.until ?? now) - now) }
    })
  }

  async holder(name: string) {
    const r = await this.db.execute({
      sql: 'select owner from job_leases where name = ? and until > ?',
      args: [name, this.clock.now()],
    })
    return r.rows.length ? String(r.rows[0].owner) : null
  }

  async release(name: string, owner: string) {
    await this.db.transaction((tx) =>
      tx.execute({ sql: 'delete from job_leases where name = ? and owner = ?', args: [name, owner] }),
    )
  }
}
