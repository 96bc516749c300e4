/** The subset of Cloudflare's R2 bucket binding the storage port needs. */
export interface R2BucketLike {
  put(key: string, value: Uint8Array, options?: { httpMetadata?: { contentType?: string } }): Promise<unknown>
  get(key: string): Promise<{ arrayBuffer(): Promise<ArrayBuffer> } | null>
  delete(key: string): Promise<void>
}

import type { FileStorage } from './port'

/** File storage on Cloudflare R2 (the edge entry). */
export class R2Storage implements FileStorage {
  readonly kind = 'r2'
  constructor(private readonly bucket: R2BucketLike) {}

  async put(key: string, data: Uint8Array, contentType: string) {
    await this.bucket.put(key, data, { httpMetadata: { contentType } })
  }

  async get(key: string) {
    const obj = await this.bucket.get(key)
    return obj ? new Uint8Array(await obj.arrayBuffer()) : null
  }

  delete(key: string) {
    return this.bucket.delete(key)
  }
}
