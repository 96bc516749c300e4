import { v7 } from 'uuid'

/**
 * A visitor id as a UUID version 7 (RFC 9562): 48 bits of milliseconds, then random bits. Ids of new
 * visitors sort by time, so the touch index on (brand, visitor) grows at its end instead of at random
 * places: touch inserts cost a third of what random (v4) ids cost (3.3 against 10.6 µs a row, ADR 0017).
 * Bun makes one natively; the Workers runtime has no such call, and the `uuid` package makes it there.
 */
const native = (globalThis as { Bun?: { randomUUIDv7?: (t?: number) => string } }).Bun?.randomUUIDv7

export function visitorIdV7(nowMs: number): string {
  return native ? native(nowMs) : v7({ msecs: nowMs })
}
