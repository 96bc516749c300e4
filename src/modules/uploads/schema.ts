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
    /**
     * When a record of another module first pointed to it (a KYC document, an account's avatar), through
     * UploadsPort.attach in that module's transaction; null: never attached (the sweep removes it after
     * UNATTACHED_TTL_MS).
     */
    attachedAt: integer('attached_at'),
    /** When the record pointing to it let it go (an avatar replaced), null while in use (RELEASED_TTL_MS). */
    releasedAt: integer('released_at'),
    /**
     * The store that holds the bytes (FileStorage.kind: `disk`, `r2`); null for rows from before it was
     * recorded. Only a process with that store removes the row (the sweep), as only it can remove the bytes.
     */
    store: text('store'),
  },
  (t) => [
    index('uploads_owner').on(t.brandId, t.scope, t.ownerId, t.createdAt),
    // the sweep's two reads: never attached by age, released by age
    index('uploads_unattached').on(t.attachedAt, t.createdAt),
    index('uploads_released').on(t.releasedAt),
  ],
)
