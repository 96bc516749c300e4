/**
 * Addresses a postback must never reach (issue 40: server-side request forgery): loopback, private,
 * link-local (cloud metadata at 169.254.169.254), carrier-grade NAT, "this network", multicast and
 * reserved ranges; in IPv6 everything but global unicast (2000::/3), and in it the special-purpose blocks,
 * with an IPv4 address carried inside an IPv6 one (mapped, NAT64, 6to4) judged as that IPv4 address; and the
 * names that mean this machine or a cloud's metadata service.
 *
 * An IPv6 address is read into its 16 bytes whatever its spelling (`::ffff:127.0.0.1`, `::ffff:7f00:1`,
 * `0:0:0:0:0:ffff:7f00:1`, `[::1]`, `fe80::1%eth0`), so no way of writing it escapes the ranges.
 */
const NAMES = /^(localhost|.*\.localhost|metadata|metadata\.google\.internal|instance-data|.*\.internal)\.?$/i

function v4(text: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text)
  if (!m) return null
  const parts = m.slice(1).map(Number)
  return parts.every((p) => p <= 255) ? parts : null
}

function internalV4([a, b]: readonly number[]): boolean {
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

const HEX_GROUP = /^[0-9a-f]{1,4}$/

/**
 * An IPv6 address as its 16 bytes (RFC 4291 text: hex groups, one `::`, a dotted IPv4 tail; brackets and a
 * zone index allowed), or null when the text is not one.
 */
export function ipv6Bytes(raw: string): number[] | null {
  let text = raw.toLowerCase()
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1)
  const zone = text.indexOf('%')
  if (zone >= 0) text = text.slice(0, zone)
  if (!text.includes(':')) return null
  const halves = text.split('::')
  if (halves.length > 2) return null
  const groupsOf = (part: string): number[] | null => {
    if (part === '') return []
    const out: number[] = []
    const list = part.split(':')
    for (let i = 0; i < list.length; i++) {
      const g = list[i]!
      if (i === list.length - 1 && g.includes('.')) {
        const four = v4(g)
        if (!four) return null
        out.push((four[0]! << 8) | four[1]!, (four[2]! << 8) | four[3]!)
      } else if (HEX_GROUP.test(g)) out.push(Number.parseInt(g, 16))
      else return null
    }
    return out
  }
  const head = groupsOf(halves[0]!)
  const tail = halves.length === 2 ? groupsOf(halves[1]!) : []
  if (!head || !tail) return null
  // a dotted tail only at the very end
  if (halves.length === 2 && halves[0]!.includes('.')) return null
  let groups: number[]
  if (halves.length === 2) {
    const missing = 8 - head.length - tail.length
    if (missing < 1) return null
    groups = [...head, ...new Array<number>(missing).fill(0), ...tail]
  } else {
    if (head.length !== 8) return null
    groups = head
  }
  return groups.flatMap((g) => [g >> 8, g & 0xff])
}

const zeros = (b: readonly number[], from: number, to: number) => b.slice(from, to).every((x) => x === 0)

/** Whether 16 bytes of IPv6 are not on the public internet (or carry an IPv4 address that is not). */
function internalV6(b: readonly number[]): boolean {
  const word = (i: number) => (b[i]! << 8) | b[i + 1]!
  // ::ffff:0:0/96, IPv4-mapped: the IPv4 address it is
  if (zeros(b, 0, 10) && word(10) === 0xffff) return internalV4(b.slice(12))
  // ::ffff:0:0:0/96, IPv4-translated (SIIT)
  if (zeros(b, 0, 8) && word(8) === 0xffff && word(10) === 0) return internalV4(b.slice(12))
  // 64:ff9b::/96, NAT64 well-known prefix: the IPv4 address it reaches
  if (word(0) === 0x64 && word(2) === 0xff9b && zeros(b, 4, 12)) return internalV4(b.slice(12))
  // 2002::/16, 6to4: the IPv4 address of the tunnel's end
  if (word(0) === 0x2002) return internalV4(b.slice(2, 6))
  // outside global unicast 2000::/3: ::/128, ::1, IPv4-compatible ::/96, 64:ff9b:1::/48 (local NAT64),
  // 100::/64 (discard), fc00::/7 (unique local), fe80::/10 (link-local), fec0::/10 (site-local),
  // ff00::/8 (multicast) and every block not assigned
  if ((b[0]! & 0xe0) !== 0x20) return true
  return (
    (word(0) === 0x2001 && word(2) < 0x200) || // 2001::/23, IETF protocol assignments (Teredo, benchmarking…)
    (word(0) === 0x2001 && word(2) === 0x0db8) || // 2001:db8::/32, documentation
    (word(0) === 0x3fff && word(2) < 0x1000) // 3fff::/20, documentation
  )
}

/** An IP address (v4 or v6, as resolved or written in a URL) that is not on the public internet. */
export function isInternalAddress(ip: string): boolean {
  const text = ip.replace(/^\[|\]$/g, '').toLowerCase()
  const four = v4(text)
  if (four) return internalV4(four)
  if (!text.includes(':')) return false
  const bytes = ipv6Bytes(text)
  // something with a colon that is not an address: never let it through as public
  return bytes === null || internalV6(bytes)
}

/** A hostname that names this machine or a metadata service, or an internal IP written as the host. */
export function isInternalHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase()
  return NAMES.test(h) || isInternalAddress(h) || isInternalAddress(urlHostname(h))
}

/**
 * The host as a URL makes it: IPv4 in any of the forms a URL takes (`2130706433`, `0x7f.1`, `127.1`) in
 * dotted decimal, IPv6 compressed. The text itself when a URL would not take it.
 */
function urlHostname(h: string): string {
  try {
    return new URL(`http://${h.includes(':') ? `[${h}]` : h}/`).hostname
  } catch {
    return h
  }
}
