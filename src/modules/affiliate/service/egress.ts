import type { AffiliateCtx } from '../context'
import { isInternalAddress, isInternalHost } from '../domain/internal-address'

const RESOLVE_MS = 2000

/** The addresses a hostname resolves to (Bun, Node); none where the runtime has no resolver (Workers). */
async function resolve(host: string): Promise<string[]> {
  let dns: typeof import('node:dns/promises')
  try {
    dns = await import('node:dns/promises')
  } catch {
    return []
  }
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    const found = await Promise.race([
      dns.lookup(host, { all: true, verbatim: true }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer in ${RESOLVE_MS} ms`)), RESOLVE_MS)
      }),
    ])
    return found.map((a) => a.address)
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Why a postback may not go to `host`, or null: the host names this machine, a metadata service or an
 * internal address, or resolves to one (loopback, private, link-local...). Asked when an endpoint is saved
 * and again before each send, after resolution (a name can be moved to an internal address later).
 * AFFILIATE_POSTBACK_PRIVATE=true allows them (development: a receiver on this machine).
 * `unresolved`: what a name that does not resolve in time is. Saved, it is allowed (its record may not
 * exist yet; asked again at each send). At a send it is refused: the send resolves the name again, and a
 * resolver that times out or fails for the check may answer the send with an internal address.
 */
export async function internalTarget(
  ctx: AffiliateCtx,
  host: string,
  unresolved: 'allowed' | 'refused',
): Promise<string | null> {
  if (ctx.allowPrivatePostbacks) return null
  if (isInternalHost(host)) return `${host} is an internal address`
  let addresses: string[]
  try {
    addresses = await resolve(host)
  } catch (e) {
    if (unresolved === 'allowed') return null
    return `${host} could not be checked: ${e instanceof Error ? e.message : 'no answer'}`
  }
  const bad = addresses.find(isInternalAddress)
  return bad ? `${host} resolves to the internal address ${bad}` : null
}
