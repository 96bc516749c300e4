import { access, mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { FileStorage } from './port'

const SAFE_KEY = /^[A-Za-z0-9._-]+$/

export class LocalDiskStorage implements FileStorage {
  readonly kind = 'disk'
  private readonly root: string
  constructor(dir: string) {
    this.root = resolve(dir)
  }

  private path(key: string) {
    if (!SAFE_KEY.test(key) || key.startsWith('.')) throw new Error(`unsafe storage key: ${key}`)
    return join(this.root, key)
  }

  async put(key: string, data: Uint8Array) {
    await mkdir(this.root, { recursive: true })
    await writeFile(this.path(key), data)
  }

  async get(key: string) {
    try {
      return new Uint8Array(await readFile(this.path(key)))
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw e
    }
  }

  async delete(key: string) {
    await rm(this.path(key), { force: true })
  }

  async deleteMany(keys: readonly string[]) {
    for (const key of keys) await this.delete(key)
  }

  async has(key: string) {
    try {
      await access(this.path(key))
      return true
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false
      throw e
    }
  }
}
