import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

export const uploads = sqliteTable(
  'uploads',
  {
    uuid: text('uuid').primaryKey(),
    brandId: integer('brand_id').notNull(),
    /** 1 trading account (owner_id = login), 2 customer (owner_id = customer id), 3 staff (owner_id = staff id). */
    scope: integer('scope').notNull(),
    ownerId: integer('owner_id').notNull(),
    purpose: text('purpose').notNull(),
    /** Storage name: `<uuid>.<extension>`. */
    fileName: text('file_name').notNull(),
    originalName: text('original_name').notNull(),
    extension: text('extension').notNull(),
    contentType: text('content_type').notNull(),
    fileSize: integer('file_size').notNull(),
    /** SHA-256 hex of the content. */
    checksum: text('checksum').notNull(),
    /** The format recognized from the content (not from the name). */
    signature: text('signature').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('uploads_owner').on(t.brandId, t.scope, t.ownerId, t.createdAt)],
)
