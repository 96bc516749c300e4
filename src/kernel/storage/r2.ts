/** The subset of Cloudflare's R2 bucket binding the storage port needs. */
export interface R2BucketLike {
  put(key: string, value: Uint8Array, options?: { httpMetadata?: { contentType?: string } }): Promise<unknown>
  get(key: string): Promise<{ arrayBuffer(): Promise<ArrayBuffer> } | null>
  delete(keys: string | string[]): Promise<void>
  head(key: string): Promise<unknown | null>
}

/** R2 deletes at most 1,000 keys a call. */
const KEYS_PER_DELETE = 1_000

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

  async deleteMany(keys: readonly string[]) {
    for (let at = 0; at < keys.length; at += KEYS_PER_DELETE)
      await this.bucket.delete(keys.slice(at, at + KEYS_PER_DELETE))
  }

  async has(key: string) {
    return (await this.bucket.head(key)) !== null
  }
}
