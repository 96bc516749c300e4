/**
 * Addresses a postback must never reach (issue 40: server-side request forgery): loopback, private,
 * link-local (cloud metadata at 169.254.169.254), carrier-grade NAT, "this network", multicast and
 * reserved ranges, unique-local and link-local IPv6, IPv4 mapped into IPv6; and the names that mean
 * this machine or a cloud's metadata service.
 */
const NAMES = /^(localhost|.*\.localhost|metadata|metadata\.google\.internal|instance-data|.*\.internal)\.?$/i

function v4(text: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text)
  if (!m) return null
  const parts = m.slice(1).map(Number)
  return parts.every((p) => p <= 255) ? parts : null
}

function internalV4([a, b]: number[]): boolean {
  return (
    a === 0 || // "this network"
    a === 10 ||
    a === 127 ||
    (a === 100 && b! >= 64 && b! <= 127) || // carrier-grade NAT
    (a === 169 && b === 254) || // link-local, cloud metadata
    (a === 172 && b! >= 16 && b! <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0) ||
    (a === 198 && (b === 18 || b === 19)) || // benchmarking
    a! >= 224 // multicast, reserved, broadcast
  )
}

/** An IP address (v4 or v6, as resolved or written in a URL) that is not on the public internet. */
export function isInternalAddress(ip: string): boolean {
  const text = ip.replace(/^\[|\]$/g, '').toLowerCase()
  const four = v4(text)
  if (four) return internalV4(four)
  if (!text.includes(':')) return false
  // IPv4 mapped or compatible (::ffff:10.0.0.1, ::10.0.0.1)
  const tail = /(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/.exec(text)
  if (tail) {
    const mapped = v4(tail[1]!)
    if (mapped && internalV4(mapped)) return true
  }
  if (text === '::' || text === '::1') return true
  const first = Number.parseInt(text.split(':')[0] || '0', 16)
  return (
    (first & 0xfe00) === 0xfc00 || // unique local fc00::/7
    (first & 0xffc0) === 0xfe80 || // link-local fe80::/10
    (first & 0xff00) === 0xff00 // multicast
  )
}

/** A hostname that names this machine or a metadata service, or an internal IP written as the host. */
export function isInternalHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase()
  return NAMES.test(h) || isInternalAddress(h)
}
