import type { Client, InStatement, ResultSet } from '@libsql/client'
// the web build imports no native libSQL: the Workers bundle has none; it wraps whatever client it is given
import type { LibSQLDatabase } from 'drizzle-orm/libsql'
import { drizzle } from 'drizzle-orm/libsql/web'
import type { WriteOrder, WriteQueueState } from './group-writer'

/** drizzle's query builder over a libSQL client or transaction (no relational schema: nothing uses db.query). */
type Orm = LibSQLDatabase<Record<string, never>>

/** The statements of a libSQL client or transaction (@libsql/client's public interface). */
interface Driver {
  execute(stmt: InStatement): Promise<ResultSet>
  /** Statements in one round trip where the database is remote (a transaction's batch). */
  batch?(stmts: InStatement[]): Promise<ResultSet[]>
  /**
   * A statement whose answer nobody reads, sent with the transaction's next round trip (a remote
   * database's transactions, kernel/db/remote/stream-batch.ts); its failure fails the whole batch. Where
   * there is no round trip to save (a local file) the driver has none and the statement runs at once.
   */
  defer?(sql: string, args?: (string | number | null)[]): void
}

/**
 * What runs statements: drizzle's query builder and, for hot paths, the driver itself (`execute`: drizzle's
 * builder costs about a microsecond per bound parameter, ten times the statement for a batch of orders).
 */
class Handle {
  readonly select: Orm['select']
  readonly selectDistinct: Orm['selectDistinct']
  readonly insert: Orm['insert']
  readonly update: Orm['update']
  readonly delete: Orm['delete']
  readonly run: Orm['run']
  readonly all: Orm['all']
  readonly get: Orm['get']

  constructor(
    orm: Orm,
    protected readonly driver: Driver,
  ) {
    this.select = orm.select.bind(orm)
    this.selectDistinct = orm.selectDistinct.bind(orm)
    this.insert = orm.insert.bind(orm)
    this.update = orm.update.bind(orm)
    this.delete = orm.delete.bind(orm)
    this.run = orm.run.bind(orm)
    this.all = orm.all.bind(orm)
    this.get = orm.get.bind(orm)
  }

  execute(stmt: InStatement): Promise<ResultSet> {
    return this.driver.execute(stmt)
  }

  /**
   * Reads that do not depend on each other, each answered in order. Outside a transaction they run side by
   * side; a transaction's go in one round trip (Tx.readAll), so reads owned by two modules cost one.
   */
  readAll(stmts: InStatement[]): Promise<ResultSet[]> {
    return Promise.all(stmts.map((s) => this.driver.execute(s)))
  }

  /** Bookkeeping whose answer nobody reads: with the next round trip where the driver can, else now. */
  protected async later(sql: string, args: (string | number | null)[] = []) {
    if (this.driver.defer) this.driver.defer(sql, args)
    else await this.driver.execute({ sql, args })
  }
}

/** A write transaction (kernel/db/unit-of-work.ts runs services' writes in one). */
export class Tx extends Handle {
  /** Savepoints open now: a savepoint is named after its depth, so its statements' texts repeat. */
  private depth = 0

  /**
   * Runs `fn` under a savepoint: if it throws, what it wrote is undone and the transaction goes on (the
   * relay delivers a pass's events in one transaction, each consumer's work under its own). On a remote
   * database the savepoint statements ride with the next statement: no round trip of their own.
   */
  async savepoint<T>(fn: () => Promise<T>): Promise<T> {
    const name = `sp${++this.depth}`
    await this.later(`SAVEPOINT ${name}`)
    try {
      const out = await fn()
      await this.later(`RELEASE ${name}`)
      return out
    } catch (e) {
      await this.later(`ROLLBACK TO ${name}`)
      await this.later(`RELEASE ${name}`)
      throw e
    } finally {
      this.depth--
    }
  }

  override readAll(stmts: InStatement[]): Promise<ResultSet[]> {
    return this.driver.batch ? this.driver.batch(stmts) : super.readAll(stmts)
  }

  /** A write whose answer nobody reads (its failure fails the transaction), with the next round trip. */
  deferred(sql: string, args: (string | number | null)[] = []) {
    return this.later(sql, args)
  }
}

/**
 * The database: queries outside a transaction, and `transaction`, which begins a libSQL write transaction
 * and hands the callback a drizzle query builder over it. Every write of the code base runs in one. The
 * client decides how transactions share the database: in a server process both adapters queue them and
 * commit those that waited together, each under a savepoint but a local file's first (group-writer.ts);
 * at the edge each request's transaction is its own. Reads outside a transaction see only what has
 * committed, so not what an earlier transaction of the same batch wrote.
 */
export class Db extends Handle {
  constructor(readonly client: Client) {
    super(drizzle(client), client)
  }

  /**
   * What this process's write queue is doing, where the client keeps one (kernel/db/group-writer.ts: a
   * server's local file or remote database); null otherwise.
   */
  writeQueue(): WriteQueueState | null {
    const c = this.client as unknown as { state?: () => WriteQueueState }
    return c.state ? c.state() : null
  }

  /** drizzle over the client, for its migrator. */
  orm(): Orm {
    return drizzle(this.client)
  }

  /**
   * `order`: where the transaction takes its turn in this process's write queue, and by when its request
   * is answered at the latest (WriteOrder: its statements get what is left of that).
   */
  async transaction<T>(fn: (tx: Tx) => Promise<T>, order?: WriteOrder): Promise<T> {
    // a client without a write queue (the edge's) takes no second argument and ignores it
    const begin = this.client.transaction as (
      mode: 'write',
      order?: WriteOrder,
    ) => ReturnType<Client['transaction']>
    const ltx = await begin.call(this.client, 'write', order)
    try {
      // drizzle over the libSQL transaction: its public driver interface (execute, batch) is all it uses
      const result = await fn(new Tx(drizzle(ltx as unknown as Client), ltx))
      await ltx.commit()
      return result
    } catch (e) {
      await ltx.rollback()
      throw e
    } finally {
      ltx.close()
    }
  }
}

/** Queries that work inside or outside a transaction. */
export type Queryable = Db | Tx
