import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * Signed-out tokens, kept until they would have expired anyway: the durable truth behind the cache's
 * revocation markers, so a sign-out survives a restart and a cache outage.
 */
export const revokedTokens = sqliteTable(
  'revoked_tokens',
  {
    jti: text('jti').primaryKey(),
    /** Epoch seconds: the token's own expiry; the row is useless after it. */
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [index('revoked_tokens_expiry').on(t.expiresAt)],
)
