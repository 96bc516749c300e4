import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import type { Queryable } from '../../kernel/db/client'
import { defineModule, definePort } from '../../kernel/module'
import { UploadsEnv, uploadsConfig } from './config'
import { uploadRoutes } from './routes'
import * as schema from './schema'
import {
  attachUpload,
  avatarBelongs,
  customerFile,
  customerFileResponse,
  releaseUpload,
  sweepUploads,
} from './service'

/** What other modules ask of uploads. */
export interface UploadsApi {
  /** Whether `ref` is an account_avatar upload of the session's principal in the brand. */
  avatarBelongs(q: Queryable, brand: Brand, session: Session, login: number, ref: string): Promise<boolean>
  /** A file the customer uploaded in the brand (any purpose but avatars), or null (another's answers null too). */
  customerFile: typeof customerFile
  /** The download of a customer's upload in the brand (uploads' own headers), or null: staff reading a KYC document. */
  customerFileResponse(
    q: Queryable,
    brandId: number,
    customerId: number,
    uuid: string,
  ): Promise<Response | null>
  /**
   * Marks an upload of the brand as used by a record the caller writes in `tx` (its own transaction): a
   * KYC document, an account's avatar. Uploads never attached are removed by the `uploads.sweep` job.
   * False when the brand has no such upload (swept meanwhile): the caller refuses its change.
   */
  attach(tx: Queryable, brandId: number, uuid: string): Promise<boolean>
  /**
   * Marks an upload no record of the caller points to any more (a replaced avatar), in the caller's
   * transaction: the sweep removes it a day later unless it is attached again meanwhile.
   */
  release(tx: Queryable, brandId: number, uuid: string): Promise<boolean>
}

export const UploadsPort = definePort<UploadsApi>('uploads')

/** Files of accounts, customers and staff, checked by their real signature (README.md of this folder). */
export const uploadsModule = defineModule({
  name: 'uploads',
  tags: [{ name: 'Uploads', description: 'File uploads (avatars, documents)' }],
  env: UploadsEnv,
  tables: schema,
  setup(k, ports) {
    const ctx = { ...k, ...uploadsConfig(k.config) }
    ports.provide(UploadsPort, {
      avatarBelongs,
      customerFile,
      customerFileResponse: (q, brandId, customerId, uuid) =>
        customerFileResponse(k, q, brandId, customerId, uuid),
      attach: (tx, brandId, uuid) => attachUpload(tx, k.clock.now(), brandId, uuid),
      release: (tx, brandId, uuid) => releaseUpload(tx, k.clock.now(), brandId, uuid),
    })
    return {
      routes: uploadRoutes(ctx),
      // uploads no record points to (never attached, or released) leave, rows then stored files
      jobs: [
        {
          name: 'uploads.sweep',
          every: 3_600_000,
          scope: 'cluster',
          // one lease per store: the engine in Bun (disk) renews its own each hour, the Worker (R2) its own
          lease: `uploads.sweep:${k.storage.kind}`,
          run: ({ now }) => sweepUploads(ctx, now),
        },
      ],
    }
  },
})

// its routes, for the type of the whole API (src/main/app-type.ts: Eden treaty)
export { DOWNLOAD_MEDIA, uploadRoutes } from './routes'
