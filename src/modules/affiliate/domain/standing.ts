/**
 * Whether an affiliate earns on a brand at a time: its own status and its access to the brand, each the
 * latest change at or before that time (none: active). A suspended affiliate, or one whose access is
 * revoked, earns nothing new; what it earned before stays, and what takes back from it still does
 * (domain/commissions.ts).
 */
export interface Standing {
  /** its own status over time, oldest first */
  status: readonly { from: number; active: boolean }[]
  /** its access to the brand over time, oldest first */
  access: readonly { from: number; active: boolean }[]
}

export const ALWAYS: Standing = { status: [], access: [] }

const activeAt = (list: Standing['status'], time: number) => {
  let active = true
  for (const x of list) if (x.from <= time) active = x.active
  return active
}

export const earnsAt = (s: Standing, time: number) => activeAt(s.status, time) && activeAt(s.access, time)

/** A standing from its change rows (brand 0: the affiliate's own status), in time order. */
export function standingOf(
  rows: readonly { brandId: number; status: string; fromTime: number }[],
  brandId: number,
): Standing {
  const of = (b: number) =>
    rows.filter((r) => r.brandId === b).map((r) => ({ from: r.fromTime, active: r.status === 'active' }))
  return { status: of(0), access: of(brandId) }
}

/** Whether the standing ever changed (else it earns at every time). */
export const everChanged = (s: Standing) => s.status.length > 0 || s.access.length > 0

/** The spans of [from, to) in which it earns, in order: what a period's tier metric counts. */
export function earningSpans(s: Standing, from: number, to: number): [number, number][] {
  const cuts = [...new Set([from, ...[...s.status, ...s.access].map((x) => x.from), to])]
    .filter((t) => t >= from && t <= to)
    .sort((a, b) => a - b)
  const out: [number, number][] = []
  for (let i = 0; i + 1 < cuts.length; i++) {
    const [a, b] = [cuts[i]!, cuts[i + 1]!]
    if (!earnsAt(s, a)) continue
    const last = out.at(-1)
    if (last && last[1] === a) last[1] = b
    else out.push([a, b])
  }
  return out
}
