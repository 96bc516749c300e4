import { closeSync, fstatSync, openSync, statSync } from 'node:fs'
import { type Libc, loadLibc } from './libc'

const PROT_READ = 1
const MAP_SHARED = 1
const OS_PAGE = 4096

/** What `tick` did: bytes of the WAL and its index now held in memory, or why it stopped trying. */
export type WalResidency = { lockedBytes: number } | { failed: string }

/** One file mapped and locked (mlock) as it grows, up to `maxBytes`; remapped when it is replaced. */
function residentFile(libc: Libc, path: string, maxBytes: number) {
  let fd = -1
  let ino = -1
  let addr = 0
  let locked = 0

  const unmap = () => {
    if (addr) libc.munmap(addr, maxBytes)
    if (fd >= 0) closeSync(fd)
    fd = -1
    addr = 0
    locked = 0
  }
  /** Maps the current file (again, if SQLite deleted and created it since); false when there is none. */
  const map = () => {
    let current: number
    try {
      current = statSync(path).ino
    } catch {
      unmap() // not created yet, or deleted by the last connection's close
      return false
    }
    if (addr && current === ino) return true
    unmap()
    fd = openSync(path, 'r')
    ino = fstatSync(fd).ino
    // the mapping may reach past the end of the file: those pages are never touched, only locked once written
    const p = libc.mmap(null, maxBytes, PROT_READ, MAP_SHARED, fd, 0)
    if (!p || p >= 2 ** 63) {
      unmap()
      throw new Error(`mmap of ${path} failed`)
    }
    addr = p
    return true
  }
  return {
    /** Locks the pages the file has grown into since the last call; returns the bytes locked. */
    tick() {
      if (!map()) return 0
      const size = Math.min(maxBytes, Math.ceil(fstatSync(fd).size / OS_PAGE) * OS_PAGE)
      // a truncated file loses its pages; those it grows into again are new ones
      if (size < locked) locked = size
      if (size > locked) {
        if (libc.mlock(addr + locked, size - locked) !== 0) {
          unmap()
          throw new Error('mlock refused (needs CAP_IPC_LOCK or a larger RLIMIT_MEMLOCK)')
        }
        locked = size
      }
      return locked
    },
    close: unmap,
  }
}

/**
 * Keeps the WAL (its first `walBytes`) and the wal-index (`-shm`) of a database in memory: the
 * checkpoint worker maps both files and locks (mlock) their pages as they grow, so the kernel never
 * reclaims them.
 *
 * Why: a WAL frame is 24 bytes longer than a database page, so nearly every frame a commit writes
 * covers part of an OS page, and a partial write to a page that is no longer in memory reads it from
 * disk first, with the request thread waiting: 20-190 ms in pwrite64 (ext4_block_write_begin), seen on
 * a VM whose host reclaims pages left idle for a few seconds (DAMON) while the WAL started over from
 * its beginning, onto pages written tens of seconds before; and 40-150 ms page faults on mapped pages,
 * which the wal-index is. Locked pages are also never read back by the checkpoint. The WAL starts over
 * at ~135 MB (the checkpointer's 32,768 frames), so 160 MiB covers it; beyond that it is only cached.
 * Locking needs CAP_IPC_LOCK or an RLIMIT_MEMLOCK of that size: a refused lock is reported once and
 * the files are left to the page cache.
 */
export async function keepWalResident(dbPath: string, walBytes = 160 * 1024 * 1024) {
  const libc = await loadLibc()
  if (!libc) return null
  const files = [
    residentFile(libc, `${dbPath}-shm`, 4 * 1024 * 1024),
    residentFile(libc, `${dbPath}-wal`, walBytes),
  ]
  let failed: string | null = null
  const close = () => {
    for (const f of files) f.close()
  }
  return {
    /** Locks the pages the files have grown into since the last call. */
    tick(): WalResidency {
      if (failed) return { failed }
      try {
        return { lockedBytes: files.reduce((sum, f) => sum + f.tick(), 0) }
      } catch (err) {
        failed = err instanceof Error ? err.message : String(err)
        close()
        return { failed }
      }
    },
    close,
  }
}
