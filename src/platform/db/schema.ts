// Every table of every module, for drizzle's relational queries and drizzle-kit.
export * from '../../modules/accounts/schema'
export * from '../../modules/auth/schema'
export * from '../../modules/market/schema'
export * from '../../modules/trading/schema'
export * from '../../modules/uploads/schema'
export * from '../brand/schema'
export * from '../outbox-schema'
