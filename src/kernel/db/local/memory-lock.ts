import { loadLibc } from './libc'

const MCL_CURRENT = 1
const MCL_FUTURE = 2
/** Lock pages as they are touched rather than populating every mapping up front (Linux 4.4+). */
const MCL_ONFAULT = 4

export type MemoryLockResult = { locked: true } | { locked: false; reason: string }

/**
 * Keeps the process's memory resident: mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT).
 *
 * Why: a page the kernel has reclaimed costs a read from disk when it is next touched, and the request
 * thread waits for it (seen here: 40-150 ms in filemap_fault on pages of the process's own mappings,
 * on a VM whose host reclaims pages idle for a few seconds). Trading servers lock their memory for the
 * same reason. Without CAP_IPC_LOCK the lock needs RLIMIT_MEMLOCK above the process's size; where it
 * cannot be had, the caller logs the reason and the service runs unlocked.
 */
export async function lockMemory(): Promise<MemoryLockResult> {
  const libc = await loadLibc()
  if (!libc) return { locked: false, reason: `no libc through Bun's FFI on ${process.platform}` }
  return libc.mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) === 0
    ? { locked: true }
    : { locked: false, reason: 'mlockall failed (RLIMIT_MEMLOCK too low?)' }
}
