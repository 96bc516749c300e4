import Database from 'libsql'

const PER_CONNECTION = 256
/** Statements that change the schema; `select *` keeps its old column list after them, so they empty every cache. */
const DDL = /^\s*(create|alter|drop)\b/i
let installed = false

/**
 * A prepared-statement cache for local libSQL files. @libsql/client prepares every statement again on
 * every execute, and preparing is not cheap here: a statement on `orders` compiles the holdings
 * triggers and its indexes (100-300 µs), several times the cost of running it for a batch of opens.
 * bench/trading.ts measured +22% trade opens/s with this cache.
 *
 * The client only ever runs a statement to completion (`all` or `run`) before handing the connection
 * back, and libSQL rebinds and resets a statement on each run, so a cached statement behaves like a
 * fresh one, also after a failed run (tests/integration/statement-cache.test.ts). A statement prepared
 * before a schema change may keep its old shape, so any CREATE, ALTER or DROP (migrations) starts every
 * connection's cache afresh. Each connection keeps its own statements (least recently used out first);
 * they go with the connection when the pool closes it.
 */
export function cacheLocalStatements() {
  if (installed) return
  installed = true
  const proto = Database.prototype as unknown as { prepare(this: object, sql: string): unknown }
  const prepare = proto.prepare
  let byConnection = new WeakMap<object, Map<string, unknown>>()
  proto.prepare = function (sql: string) {
    if (DDL.test(sql)) {
      byConnection = new WeakMap()
      return prepare.call(this, sql)
    }
    let cache = byConnection.get(this)
    if (!cache) {
      cache = new Map()
      byConnection.set(this, cache)
    }
    const hit = cache.get(sql)
    if (hit !== undefined) {
      // refresh its place in the LRU order
      cache.delete(sql)
      cache.set(sql, hit)
      return hit
    }
    const stmt = prepare.call(this, sql)
    if (cache.size >= PER_CONNECTION) cache.delete(cache.keys().next().value!)
    cache.set(sql, stmt)
    return stmt
  }
}
