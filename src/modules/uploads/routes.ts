import { Elysia, t } from 'elysia'
import { ANY_SESSION } from '../../kernel/auth/session'
import { doc, errors } from '../../kernel/http/openapi'
import { Int, nameModels, OneOf, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import {
  downloadUpload,
  listUploads,
  PURPOSES,
  type Purpose,
  UNATTACHED_TTL_MS,
  type UploadsCtx,
  uploadFile,
} from './service'

const PurposeField = OneOf(PURPOSES, {
  description: 'account_avatar (png, jpg, jpeg, webp, gif), kyc_document or attachment (general list)',
})

const FileEntry = t.Object({
  uuid: t.String(),
  storage_name: t.String(),
  original_name: t.String(),
  extension: t.String(),
  signature: t.String({ description: 'format recognized from the content' }),
  content_type: t.String(),
  file_size: Int(),
  checksum: t.String({ description: 'SHA-256, hex' }),
})

const UploadResult = t.Object({
  file_name: t.String(),
  file_id: t.String({ description: 'the uuid' }),
  files: t.Array(FileEntry),
  avatar: t.Optional(t.String({ description: 'avatar reference for PUT /account/me (account_avatar only)' })),
})

const ListEntry = t.Object({
  uuid: t.String(),
  file_name: t.String(),
  original_name: t.String(),
  content_type: t.String(),
  file_size: Int(),
  scope: Int({ description: '1 trading account, 2 customer, 3 staff' }),
  purpose: t.String(),
  created_time: Int(),
})

/** What a download of an upload may be served as (its stored content type), for the document's media. */
export const DOWNLOAD_MEDIA = [
  'image/png',
  'image/jpeg',
  'image/webp',
  'image/gif',
  'image/svg+xml',
  'application/pdf',
  'application/octet-stream',
]

export const uploadRoutes = (ctx: UploadsCtx) =>
  new Elysia({ name: 'upload-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .post('/upload', ({ brand, session, body }) => uploadFile(ctx, brand, session, body.file, body.purpose), {
      auth: { roles: ANY_SESSION },
      parse: 'multipart/form-data',
      body: t.Object(
        {
          file: t.File({ description: 'the file (its real signature is checked, not only its extension)' }),
          purpose: PurposeField,
        },
        { example: { purpose: 'kyc_document' } },
      ),
      response: {
        200: UploadResult,
        ...errors({ 413: ['PAYLOAD_TOO_LARGE'], 429: ['TOO_MANY_REQUESTS'] }),
      },
      detail: doc('Uploads', 'Upload a file', {
        description:
          `The real signature is checked (not the extension alone); at most ${ctx.config.upload.maxBytes} ` +
          'bytes (413 PAYLOAD_TOO_LARGE). Stored under a generated uuid name with the original extension. ' +
          `Each account, customer or staff member stores at most ${ctx.budget.files} files and ` +
          `${ctx.budget.bytes} bytes in 24 hours in a brand (UPLOAD_MAX_FILES_PER_DAY, UPLOAD_MAX_BYTES_PER_DAY; ` +
          'counted across instances): beyond, 429 TOO_MANY_REQUESTS with Retry-After (seconds until the ' +
          'oldest of those files leaves the 24 hours); a refused upload does not count. An avatar or KYC ' +
          `document nothing uses within ${UNATTACHED_TTL_MS / 3_600_000} hours (set as an avatar with PUT ` +
          '/account/me, attached to a KYC document) is removed, and a replaced avatar a day after: a download ' +
          'then answers 404. A general file (purpose attachment) is kept.',
      }),
    })
    .get(
      '/upload/list',
      ({ brand, session, query }) =>
        listUploads(ctx, brand, session, { ...query, purpose: query.purpose as Purpose | undefined }),
      {
        auth: { roles: ANY_SESSION },
        // A plain string pattern: Elysia fills an optional UnionEnum query value with its first member.
        ...textInput({
          query: {
            purpose: t.Optional(
              t.String({
                pattern: `^(${PURPOSES.join('|')})$`,
                description: `only uploads of this purpose (${PURPOSES.join(', ')})`,
                example: 'account_avatar',
              }),
            ),
            limit: t.Optional(Int({ minimum: 1, maximum: 500, description: 'rows a page (default 500)' })),
            cursor: t.Optional(
              t.String({ maxLength: 64, description: 'next_cursor of the previous page: the page after it' }),
            ),
          },
        }),
        response: {
          200: t.Object({
            rows: t.Array(ListEntry),
            next_cursor: t.Union([t.String(), t.Null()], {
              description: 'the next page (cursor), or null on the last',
            }),
          }),
          ...errors(),
        },
        detail: doc('Uploads', "List the session's own uploads, newest first", {
          description:
            'A page at a time (`limit`, then `cursor` = the last next_cursor): every upload is reached, and one made between pages neither repeats nor hides a row. 400 INVALID_DATA for a cursor this list did not give.',
        }),
      },
    )
    .get('/upload/:uuid', ({ brand, session, params }) => downloadUpload(ctx, brand, session, params.uuid), {
      auth: { roles: ANY_SESSION },
      ...textInput({
        params: {
          uuid: t.String({
            format: 'uuid',
            description: 'file_id returned by POST /upload',
            example: '00000000-0000-4000-8000-000000000000',
          }),
        },
      }),
      // a file, not JSON: the document takes its 200 from the media (kernel/http/openapi-finish.ts)
      response: errors({ 404: ['FILE_NOT_FOUND'] }),
      detail: doc('Uploads', 'Download one of your own uploads', {
        media: DOWNLOAD_MEDIA,
        description:
          "The file; SVG and documents as attachments. Served with a restrictive CSP and nosniff; another principal's file answers 404.",
      }),
    })

nameModels({ UploadedFile: FileEntry, UploadResult, UploadListEntry: ListEntry })
