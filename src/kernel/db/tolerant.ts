import type { Logger } from '../logger'

/** The libSQL driver refuses to return an integer outside JavaScript's safe range (drizzle wraps it). */
function isUndecodable(e: unknown): boolean {
  for (let cur: unknown = e, depth = 0; cur && depth < 5; cur = (cur as Error).cause, depth++)
    if (cur instanceof RangeError || /cannot be safely represented/i.test(String((cur as Error).message)))
      return true
  return false
}

/**
 * A bulk read that a single bad row cannot fail: should a stored integer be beyond what the driver can
 * return (written before inputs were bounded, or by hand), the read falls back to the keys and then to
 * one row at a time, logging and skipping each row it cannot decode. Start-up loads use it, so no stored
 * value can keep the service from starting.
 */
export async function readSkippingBadRows<K, R>(
  logger: Logger,
  what: string,
  read: {
    all: () => Promise<R[]>
    keys: () => Promise<K[]>
    one: (key: K) => Promise<R[]>
  },
): Promise<R[]> {
  try {
    return await read.all()
  } catch (e) {
    if (!isUndecodable(e)) throw e
  }
  const out: R[] = []
  for (const key of await read.keys()) {
    try {
      out.push(...(await read.one(key)))
    } catch (e) {
      if (!isUndecodable(e)) throw e
      logger.log('error', `${what}: row skipped, a stored value cannot be read`, {
        key: String(key),
        err: String((e as Error).message),
      })
    }
  }
  return out
}

/**
 * A single-row read that answers "nothing" instead of failing when the row cannot be decoded (logged):
 * the caller then says "not found", as for a row that is not there.
 */
export async function readOrNothing<R>(logger: Logger, what: string, read: () => Promise<R[]>): Promise<R[]> {
  try {
    return await read()
  } catch (e) {
    if (!isUndecodable(e)) throw e
    logger.log('error', `${what}: row skipped, a stored value cannot be read`, {
      err: String((e as Error).message),
    })
    return []
  }
}
