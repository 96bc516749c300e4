import { bytesToHex } from '@noble/hashes/utils.js'
import {
  and,
  count,
  desc,
  eq,
  gt,
  inArray,
  isNotNull,
  isNull,
  lt,
  min,
  ne,
  or,
  type SQL,
  sql,
  sum,
} from 'drizzle-orm'
import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import type { Queryable } from '../../kernel/db/client'
import { ApiError, invalid } from '../../kernel/http/errors'
import type { Kernel } from '../../kernel/kernel'
import type { UploadsConfig } from './config'
import { PDF_DECODE_CEILING } from './domain/pdf'
import {
  AVATAR_EXTENSIONS,
  cleanOriginalName,
  GENERAL_EXTENSIONS,
  inspect,
  uploadExtension,
} from './domain/signature'
import { refuse } from './errors'
import { uploads } from './schema'

export const PURPOSES = ['account_avatar', 'kyc_document', 'attachment'] as const
export type Purpose = (typeof PURPOSES)[number]

/** Uploads belong to the session's principal: 1 account login, 2 customer, 3 staff member. */
function ownerOf(session: Session): { scope: number; ownerId: number } {
  if (session.type === 'SESSION_USER') return { scope: 1, ownerId: session.login! }
  if (session.type === 'SESSION_CUSTOMER') return { scope: 2, ownerId: session.customerId! }
  return { scope: 3, ownerId: session.staffId! }
}

type UploadRow = typeof uploads.$inferSelect

/** The kernel and the module's settings (config.ts). */
export type UploadsCtx = Kernel & UploadsConfig

/**
 * What a principal stored in the brand within the budget's window (files, bytes, the oldest one's time),
 * and the 429 it answers when one more file of `size` bytes would pass the budget (null when it fits).
 * `stored` says whether that file's own row is already counted (the check in the insert's transaction).
 */
async function overBudget(
  ctx: UploadsCtx,
  q: Queryable,
  owner: { brandId: number; scope: number; ownerId: number },
  size: number,
  stored: boolean,
) {
  const { files, bytes, windowMs } = ctx.budget
  const now = ctx.clock.now()
  const [used] = await q
    .select({ n: count(), total: sum(uploads.fileSize), oldest: min(uploads.createdAt) })
    .from(uploads)
    .where(
      and(
        eq(uploads.brandId, owner.brandId),
        eq(uploads.scope, owner.scope),
        eq(uploads.ownerId, owner.ownerId),
        gt(uploads.createdAt, now - windowMs),
      ),
    )
  const n = (used?.n ?? 0) + (stored ? 0 : 1)
  const total = Number(used?.total ?? 0) + (stored ? 0 : size)
  if (n <= files && total <= bytes) return null
  // the window frees room as its oldest files leave it: the first of them at the earliest
  const retryAfter = Math.max(1, Math.ceil(((used?.oldest ?? now) + windowMs - now) / 1000))
  return new ApiError(
    429,
    'TOO_MANY_REQUESTS',
    `file: at most ${files} files and ${bytes} bytes in 24 hours per account, customer or staff member`,
    { 'retry-after': String(retryAfter) },
  )
}

const listEntry = (r: UploadRow) => ({
  uuid: r.uuid,
  file_name: r.fileName,
  original_name: r.originalName,
  content_type: r.contentType,
  file_size: r.fileSize,
  scope: r.scope,
  purpose: r.purpose,
  created_time: Math.floor(r.createdAt / 1000),
})

export async function uploadFile(
  ctx: UploadsCtx,
  brand: Brand,
  session: Session,
  file: File,
  purpose: Purpose,
) {
  if (file.size > ctx.config.upload.maxBytes)
    throw refuse('PAYLOAD_TOO_LARGE', `file: larger than ${ctx.config.upload.maxBytes} bytes`)
  // a part sent with an empty filename reaches here as a Blob without a name
  if (typeof file.name !== 'string' || file.name === '')
    throw invalid('file: a file name is required (its extension says what the file is)')
  // the extension before the name is trimmed to its 255 characters: a long name keeps its own
  const ext = uploadExtension(file.name)
  const originalName = cleanOriginalName(file.name)
  const allowed: readonly string[] = purpose === 'account_avatar' ? AVATAR_EXTENSIONS : GENERAL_EXTENSIONS
  if (!allowed.includes(ext))
    throw invalid(
      `file: extension .${ext.slice(0, 16) || '(none)'} is not allowed for ${purpose} (allowed: ${allowed.join(', ')})`,
    )
  const { scope, ownerId } = ownerOf(session)
  const owner = { brandId: brand.id, scope, ownerId }
  // a principal past its budget costs a read, not a check of the bytes nor a write to the store
  const early = await overBudget(ctx, ctx.db, owner, file.size, false)
  if (early) throw early
  const bytes = new Uint8Array(await file.arrayBuffer())
  // a PDF's compressed streams may cost a few times the upload limit to check, never more than the ceiling
  const pdfDecodeBudget = Math.min(PDF_DECODE_CEILING, 4 * ctx.config.upload.maxBytes)
  const verdict = await inspect(bytes, ext, { pdfDecodeBudget })
  if (!verdict.ok) throw invalid(`file: ${verdict.reason}`)

  const uuid = crypto.randomUUID()
  const storageName = `${uuid}.${ext}`
  // Web Crypto: the same on Bun and Workers
  const checksum = bytesToHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)))
  await ctx.storage.put(storageName, bytes, verdict.contentType)
  try {
    await ctx.db.transaction(async (tx) => {
      // the row first: its write takes the database's write lock, so the count below sees every upload
      // committed before it and none can commit between them (two instances cannot both pass the budget)
      await tx.insert(uploads).values({
        uuid,
        brandId: brand.id,
        scope,
        ownerId,
        purpose,
        fileName: storageName,
        originalName,
        extension: ext,
        contentType: verdict.contentType,
        fileSize: bytes.length,
        checksum,
        signature: verdict.signature,
        createdAt: ctx.clock.now(),
        // a general file is its owner's own, in use from the start: never in the sweep's range
        attachedAt: purpose === 'attachment' ? ctx.clock.now() : null,
        store: ctx.storage.kind,
      })
      const over = await overBudget(ctx, tx, owner, bytes.length, true)
      if (over) throw over
    })
  } catch (e) {
    // Nothing half-written: no metadata, no orphan file.
    await ctx.storage.delete(storageName).catch(() => {})
    throw e
  }
  return {
    file_name: storageName,
    file_id: uuid,
    files: [
      {
        uuid,
        storage_name: storageName,
        original_name: originalName,
        extension: ext,
        signature: verdict.signature,
        content_type: verdict.contentType,
        file_size: bytes.length,
        checksum,
      },
    ],
    ...(purpose === 'account_avatar' ? { avatar: uuid } : {}),
  }
}

const ownedBy = (brand: Brand, session: Session) => {
  const { scope, ownerId } = ownerOf(session)
  return and(eq(uploads.brandId, brand.id), eq(uploads.scope, scope), eq(uploads.ownerId, ownerId))
}

/** A page of the list ends after this upload: its time and uuid (newest first, the uuid breaking ties). */
const CURSOR = /^(\d{1,16})\.([0-9a-f-]{36})$/

/**
 * The session's own uploads, newest first, `limit` a page; `cursor` (the last page's next_cursor) goes on
 * after its last row, so every upload is reached, and one made meanwhile neither repeats nor hides a row.
 */
export async function listUploads(
  ctx: Kernel,
  brand: Brand,
  session: Session,
  q: { purpose?: Purpose; limit?: number; cursor?: string },
) {
  const limit = q.limit ?? 500
  const at = q.cursor === undefined ? null : CURSOR.exec(q.cursor)
  if (q.cursor !== undefined && !at) throw invalid('cursor: not a next_cursor of this list')
  const after = at
    ? or(
        lt(uploads.createdAt, Number(at[1])),
        and(eq(uploads.createdAt, Number(at[1])), lt(uploads.uuid, at[2]!)),
      )
    : undefined
  const rows = await ctx.db
    .select()
    .from(uploads)
    .where(and(ownedBy(brand, session), q.purpose ? eq(uploads.purpose, q.purpose) : undefined, after))
    .orderBy(desc(uploads.createdAt), desc(uploads.uuid))
    .limit(limit + 1)
  const page = rows.slice(0, limit)
  const last = page.at(-1)
  return {
    rows: page.map(listEntry),
    next_cursor: rows.length > limit && last ? `${last.createdAt}.${last.uuid}` : null,
  }
}

export async function downloadUpload(ctx: Kernel, brand: Brand, session: Session, uuid: string) {
  const [row] = await ctx.db
    .select()
    .from(uploads)
    .where(and(eq(uploads.uuid, uuid), ownedBy(brand, session)))
  const notFound = refuse('FILE_NOT_FOUND', 'file not found')
  if (!row) throw notFound
  const bytes = await ctx.storage.get(row.fileName)
  if (!bytes) throw notFound
  return fileResponse(row, bytes)
}

/** A stored file as every download serves it: its type, images inline, the rest as attachments, no sniffing. */
function fileResponse(row: UploadRow, bytes: Uint8Array) {
  const inline = row.contentType.startsWith('image/') && row.signature !== 'svg'
  return new Response(bytes as Uint8Array<ArrayBuffer>, {
    headers: {
      'content-type': row.contentType,
      'content-length': String(bytes.length),
      'content-disposition': `${inline ? 'inline' : 'attachment'}; filename="${row.fileName}"`,
      'content-security-policy': "default-src 'none'; sandbox",
      'x-content-type-options': 'nosniff',
      // a KYC document or an avatar stays on no shared computer after its session ends
      'cache-control': 'private, no-store',
    },
  })
}

/** PUT /account/me accepts an avatar only if it is an account_avatar upload of the same principal. */
export async function avatarBelongs(
  db: Queryable,
  brand: Brand,
  session: Session,
  _login: number,
  ref: string,
) {
  const [row] = await db
    .select({ uuid: uploads.uuid })
    .from(uploads)
    .where(and(eq(uploads.uuid, ref), eq(uploads.purpose, 'account_avatar'), ownedBy(brand, session)))
  return !!row
}

/** A customer's own upload (any purpose but avatars), the whole row: scoped by brand and owner in the query. */
async function customerUpload(q: Queryable, brandId: number, customerId: number, uuid: string) {
  const [row] = await q
    .select()
    .from(uploads)
    .where(
      and(
        eq(uploads.uuid, uuid),
        eq(uploads.brandId, brandId),
        eq(uploads.scope, 2),
        eq(uploads.ownerId, customerId),
      ),
    )
  return row && row.purpose !== 'account_avatar' ? row : null
}

/** A customer's own upload (KYC attaches files by id), or null (another's answers null too). */
export async function customerFile(q: Queryable, brandId: number, customerId: number, uuid: string) {
  const row = await customerUpload(q, brandId, customerId, uuid)
  return (
    row && {
      uuid: row.uuid,
      purpose: row.purpose,
      contentType: row.contentType,
      originalName: row.originalName,
      fileSize: row.fileSize,
    }
  )
}

/**
 * A customer's upload served as its owner's download is (the same headers), for staff of the brand who
 * reach it through a record naming it (a KYC document); null when the customer has no such upload in the
 * brand or its bytes are gone.
 */
export async function customerFileResponse(
  ctx: Pick<Kernel, 'storage'>,
  q: Queryable,
  brandId: number,
  customerId: number,
  uuid: string,
) {
  const row = await customerUpload(q, brandId, customerId, uuid)
  const bytes = row && (await ctx.storage.get(row.fileName))
  return row && bytes ? fileResponse(row, bytes) : null
}

/**
 * Marks an upload of the brand as used by a record of the caller (a KYC document, an account's avatar),
 * in the caller's transaction `tx`: the mark commits with that record or not at all. An upload released
 * before is in use again. False when the brand has no such upload (never made, or already swept): the
 * caller refuses its change then, and its transaction writes nothing.
 */
export async function attachUpload(tx: Queryable, now: number, brandId: number, uuid: string) {
  const [row] = await tx
    .update(uploads)
    .set({ attachedAt: sql`coalesce(${uploads.attachedAt}, ${now})`, releasedAt: null })
    .where(and(eq(uploads.uuid, uuid), eq(uploads.brandId, brandId)))
    .returning({ uuid: uploads.uuid })
  return !!row
}

/**
 * Marks an attached upload of the brand as no longer used (an avatar replaced), in the caller's
 * transaction: the sweep removes it RELEASED_TTL_MS later unless it is attached again meanwhile. The
 * caller releases only what no record of its own still points to. False when nothing was marked.
 */
export async function releaseUpload(tx: Queryable, now: number, brandId: number, uuid: string) {
  const [row] = await tx
    .update(uploads)
    .set({ releasedAt: now })
    .where(and(eq(uploads.uuid, uuid), eq(uploads.brandId, brandId), isNull(uploads.releasedAt)))
    .returning({ uuid: uploads.uuid })
  return !!row
}

const HOUR_MS = 3_600_000
/**
 * How long an upload may wait to be attached: 3 days. The client's flow attaches a file right after
 * POST /upload (spec 4.10: upload, take file_id, attach), but a customer who stops halfway through KYC
 * to find a document (a Friday evening, back on Monday) still finds the files sent; past that, the file
 * is sent again. The budget (UPLOAD_MAX_BYTES_PER_DAY) bounds what a principal keeps meanwhile.
 */
export const UNATTACHED_TTL_MS = 72 * HOUR_MS
/** How long a released upload (a replaced avatar) stays: a day, for pages and caches still showing it. */
export const RELEASED_TTL_MS = 24 * HOUR_MS
/**
 * Rows deleted per statement: a pass never holds the write lock for long. At the edge a run takes a few
 * pages (their statements and file deletes are subrequests of the cron invocation every job shares).
 */
export const SWEEP_PAGE = 500
/** Pages a run at the edge: a statement and one R2 call each, of the cron invocation's 1,000 subrequests. */
const EDGE_SWEEP_PAGES = 4

/**
 * The `uploads.sweep` job: deletes the avatars and KYC documents never attached within UNATTACHED_TTL_MS
 * (a general file, purpose `attachment`, is kept: the principal's own, bounded by the daily budget) and
 * the uploads released
 * more than RELEASED_TTL_MS ago, a page per statement (each row deleted by one statement only: two runs
 * at once delete each once, the second finds it gone), then deletes their stored files after the
 * rows' commit. The row goes first: a read or an attach of it answers as for an unknown upload from then
 * on, so no record can point to a file deleted under it. A file whose deletion fails is logged and left
 * (no row names it any more: nothing serves it, it only takes room). Only the rows of its own store
 * (`store`): another kind's are left to a run where that store is. The rows and files deleted.
 */
export async function sweepUploads(ctx: Pick<Kernel, 'db' | 'storage' | 'logger' | 'edge'>, now: number) {
  const due = or(
    and(
      isNull(uploads.attachedAt),
      // a general file (spec 4.4b) is the principal's own, listed by GET /upload/list: kept
      ne(uploads.purpose, 'attachment'),
      lt(uploads.createdAt, now - UNATTACHED_TTL_MS),
    ),
    and(isNotNull(uploads.releasedAt), lt(uploads.releasedAt, now - RELEASED_TTL_MS)),
  )
  // the disk's run first tells whose the bytes of rows from before the store was recorded are
  const settled = ctx.storage.kind === 'disk' ? await settleUnrecorded(ctx, due) : 0
  // only rows whose bytes this process's store holds: the engine in Bun beside Workers (R2) would drop
  // the row of a file it cannot delete, and the file would stay for good (the Worker's run sweeps those)
  const mine = and(due, eq(uploads.store, ctx.storage.kind))
  let rows = 0
  let files = 0
  let failed = 0
  for (let pages = 0; pages < (ctx.edge ? EDGE_SWEEP_PAGES : Number.POSITIVE_INFINITY); pages++) {
    const page = ctx.db.select({ uuid: uploads.uuid }).from(uploads).where(mine).limit(SWEEP_PAGE)
    // the condition again on the delete: a row attached since the page was read stays
    const gone = await ctx.db
      .delete(uploads)
      .where(and(inArray(uploads.uuid, page), mine))
      .returning({ fileName: uploads.fileName })
    rows += gone.length
    // the page's files in one call (R2: one subrequest for up to 1,000 keys)
    try {
      await ctx.storage.deleteMany(gone.map((g) => g.fileName))
      files += gone.length
    } catch (e) {
      failed += gone.length
      ctx.logger.log('warn', 'swept uploads: stored files not deleted (left as orphans)', {
        files: gone.length,
        err: e instanceof Error ? e.message : String(e),
      })
    }
    if (gone.length < SWEEP_PAGE) break
  }
  if (rows > 0 || settled > 0) ctx.logger.log('info', 'uploads swept', { rows, files, failed, settled })
  return { rows, files, failed, settled }
}

/**
 * Rows from before each upload recorded its store (`store` null) that are due: the disk's run looks at
 * each file (a local check) and records `disk` when it holds it, else `r2` (uploaded at the edge, or lost
 * from the disk), so each side's sweep takes its own from then on. A page a run: they are few, and only
 * ever fewer.
 */
async function settleUnrecorded(ctx: Pick<Kernel, 'db' | 'storage'>, due: SQL | undefined) {
  const rows = await ctx.db
    .select({ uuid: uploads.uuid, fileName: uploads.fileName })
    .from(uploads)
    .where(and(due, isNull(uploads.store)))
    .limit(SWEEP_PAGE)
  const held: string[] = []
  const elsewhere: string[] = []
  for (const r of rows) ((await ctx.storage.has(r.fileName)) ? held : elsewhere).push(r.uuid)
  for (const [store, uuids] of [
    ['disk', held],
    ['r2', elsewhere],
  ] as const)
    if (uuids.length > 0)
      await ctx.db
        .update(uploads)
        .set({ store })
        .where(and(inArray(uploads.uuid, uuids), isNull(uploads.store)))
  return rows.length
}
