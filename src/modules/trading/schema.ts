import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, real, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { CLOSE_REASONS } from './domain/close-reasons'

/**
 * Orders and positions in one table, as MetaTrader keeps them: a pending order becomes a position in
 * place (same ticket); a partial close writes the closed part as a new closed row (`parent` = ticket).
 * Money columns are integer minor units of the account currency (DESIGN rule 3).
 */
export const orders = sqliteTable(
  'orders',
  {
    ticket: integer('ticket').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    login: integer('login').notNull(),
    symbol: text('symbol').notNull(),
    /** 0 BUY, 1 SELL, 2 BUY_LIMIT, 3 SELL_LIMIT, 4 BUY_STOP, 5 SELL_STOP (becomes 0/1 on activation). */
    cmd: integer('cmd').notNull(),
    /** Hundredths of a lot. */
    volume: integer('volume').notNull(),
    state: text('state', { enum: ['pending', 'open', 'closed', 'cancelled', 'expired'] }).notNull(),
    openPrice: real('open_price').notNull(),
    /** Epoch milliseconds. */
    openTime: integer('open_time').notNull(),
    sl: real('sl').notNull().default(0),
    tp: real('tp').notNull().default(0),
    /** Epoch seconds; 0 = good till cancelled. */
    expiration: integer('expiration').notNull().default(0),
    comment: text('comment').notNull().default(''),
    commission: integer('commission').notNull().default(0),
    storage: integer('storage').notNull().default(0),
    profit: integer('profit').notNull().default(0),
    closePrice: real('close_price').notNull().default(0),
    closeTime: integer('close_time').notNull().default(0),
    closeReason: text('close_reason', { enum: CLOSE_REASONS }).notNull().default(''),
    parent: integer('parent'),
    /** Day number (epoch days) of the last swap rollover charged; a rollover runs once per day. */
    rolloverDay: integer('rollover_day').notNull().default(0),
    updatedAt: integer('updated_at').notNull(),
    /** The app instance that wrote the row last, so `resync` reads only other instances' changes. */
    origin: text('origin').notNull().default(''),
    /** Who opened it: `client`, `staff:<id>`, or a module acting through the write port (`copy:<id>`). */
    actor: text('actor').notNull().default(''),
  },
  (t) => [
    index('orders_login_state').on(t.login, t.state),
    // Partial: an open or pending order (every insert under load) does not touch the history index.
    index('orders_history')
      .on(t.login, t.closeTime, t.ticket)
      .where(sql`state in ('closed', 'cancelled', 'expired')`),
    index('orders_updated').on(t.updatedAt, t.origin),
  ],
)

/**
 * Idempotency keys of trade requests (the `Idempotency-Key` header, the write port's key), one per
 * login: a request repeated with its key returns what the first did and changes nothing; a key reused
 * for another request is refused (its fingerprint differs). Kept for 7 days (`trading.requests-expire`).
 */
export const tradeRequests = sqliteTable(
  'trade_requests',
  {
    login: integer('login').notNull(),
    idempotencyKey: text('idempotency_key').notNull(),
    kind: text('kind', { enum: ['open', 'close', 'modify', 'cancel'] }).notNull(),
    requestHash: text('request_hash').notNull(),
    /** The order it opened or acted on. */
    ticket: integer('ticket').notNull(),
    actor: text('actor').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.login, t.idempotencyKey] }),
    index('trade_requests_created').on(t.createdAt),
  ],
)

/**
 * Open positions netted per login, symbol and direction (domain/holdings.ts), kept in the transaction of
 * every change to an open position. The margin check of an open reads one row per symbol here instead of
 * aggregating every position of the account; the property test checks it against `orders`.
 */
export const holdings = sqliteTable(
  'holdings',
  {
    login: integer('login').notNull(),
    symbol: text('symbol').notNull(),
    /** 0 buy, 1 sell. */
    cmd: integer('cmd').notNull(),
    volume: integer('volume').notNull(),
    /** Sum of volume * open price. */
    volumePrice: real('volume_price').notNull(),
    commission: integer('commission').notNull(),
    storage: integer('storage').notNull(),
  },
  (t) => [primaryKey({ columns: [t.login, t.symbol, t.cmd] })],
)

/**
 * Accounts in a margin-call episode: a row from the notice (written with it, once) until the margin
 * recovers or the last position closes. In the database, not the cache: a Redis restart without
 * persistence lost the mark and the episode was notified again.
 */
export const marginCallEpisodes = sqliteTable('margin_call_episodes', {
  login: integer('login').primaryKey(),
  startedAt: integer('started_at').notNull(),
})
