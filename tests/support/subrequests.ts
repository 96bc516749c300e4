import type { KeyValueStore } from '../../src/kernel/cache'
import type { TestApp } from './app'

type Fn = (...a: unknown[]) => Promise<unknown>

/**
 * Counts what a request or a job would spend of a Worker invocation's 1,000 subrequests on a test app:
 * every call of the shared cache (an Upstash REST request each) and every statement to the database (a
 * libSQL HTTP request each: an execute, a batch, a transaction's BEGIN and its commit or rollback).
 */
export class SubrequestCounter {
  statements = 0
  cacheCalls = 0
  transactions = 0

  /** The shared cache, counted. */
  store(inner: KeyValueStore): KeyValueStore {
    return new Proxy(inner, {
      get: (target, name, receiver) => {
        const v = Reflect.get(target, name, receiver)
        if (typeof v !== 'function' || name === 'close') return v
        return (...args: unknown[]) => {
          this.cacheCalls++
          return (v as Fn).apply(target, args)
        }
      },
    })
  }

  /** The app's database client, counted from now on. */
  watch(app: TestApp) {
    const client = app.ctx.db.client as unknown as Record<string, Fn>
    for (const name of ['execute', 'batch'] as const) {
      const f = client[name]!.bind(client)
      client[name] = (...a: unknown[]) => {
        this.statements++
        return f(...a)
      }
    }
    const begin = client.transaction!.bind(client)
    client.transaction = async (...a: unknown[]) => {
      this.statements++ // BEGIN
      this.transactions++
      const tx = (await begin(...a)) as Record<string, unknown>
      return new Proxy(tx, {
        get: (target, name) => {
          const v = Reflect.get(target, name)
          if (typeof v !== 'function') return v
          if (name === 'execute' || name === 'batch' || name === 'commit' || name === 'rollback')
            return (...args: unknown[]) => {
              this.statements++
              return (v as Fn).apply(target, args)
            }
          return (v as Fn).bind(target)
        },
      })
    }
  }

  reset() {
    this.statements = 0
    this.cacheCalls = 0
    this.transactions = 0
  }

  /** Statements and cache calls together. */
  get total() {
    return this.statements + this.cacheCalls
  }
}
