/** The few libc calls the server makes for memory locking (kernel/memory-lock, db/wal-residency). */
export interface Libc {
  mmap(addr: null, length: number, prot: number, flags: number, fd: number, offset: number): number | null
  mlock(addr: number, length: number): number
  munmap(addr: number, length: number): number
  mlockall(flags: number): number
}

let loaded: Promise<Libc | null> | null = null

/** libc through Bun's FFI, opened once; null where there is none (not Linux, or no FFI). */
export function loadLibc(): Promise<Libc | null> {
  loaded ??= (async () => {
    if (process.platform !== 'linux') return null
    try {
      const { dlopen } = await import('bun:ffi')
      const { symbols } = dlopen('libc.so.6', {
        mmap: { args: ['ptr', 'u64', 'i32', 'i32', 'i32', 'i64'], returns: 'ptr' },
        mlock: { args: ['ptr', 'u64'], returns: 'i32' },
        munmap: { args: ['ptr', 'u64'], returns: 'i32' },
        mlockall: { args: ['i32'], returns: 'i32' },
      })
      return symbols as unknown as Libc
    } catch {
      return null
    }
  })()
  return loaded
}
