/**
 * A visitor id as a UUID version 7 (RFC 9562): 48 bits of milliseconds, then random bits. Ids of new
 * visitors sort by time, so the touch index on (brand, visitor) grows at its end instead of at random
 * places: touch inserts cost a third of what random (v4) ids cost (3.3 against 10.6 µs a row, ADR 0017).
 */
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))

// random bytes drawn 4 KiB at a time: one call per 409 ids instead of one each
const pool = new Uint8Array(4096)
let used = pool.length

// Bun makes one natively (the Workers runtime does not have it)
const native = (globalThis as { Bun?: { randomUUIDv7?: (t?: number) => string } }).Bun?.randomUUIDv7

export function visitorIdV7(nowMs: number): string {
  if (native) return native(nowMs)
  if (used + 10 > pool.length) {
    crypto.getRandomValues(pool)
    used = 0
  }
  const b = new Uint8Array(16)
  b.set(pool.subarray(used, used + 10), 6)
  used += 10
  let ms = nowMs
  for (let i = 5; i >= 0; i--) {
    b[i] = ms % 256
    ms = Math.floor(ms / 256)
  }
  b[6] = (b[6] & 0x0f) | 0x70
  b[8] = (b[8] & 0x3f) | 0x80
  const x = (i: number) => HEX[b[i]]
  return `${x(0)}${x(1)}${x(2)}${x(3)}-${x(4)}${x(5)}-${x(6)}${x(7)}-${x(8)}${x(9)}-${x(10)}${x(11)}${x(12)}${x(13)}${x(14)}${x(15)}`
}
