/**
 * Which touch a registration is attributed to (spec 4.16), in this order:
 *
 * 1. `install`: registering from the app with an `installation_id` of the brand whose install carried
 *    attribution values (the app's own record of how it was installed), within the window of the install.
 * 2. `registration_body`: the public values an external landing page passed in the registration body
 *    (they describe the page the visitor registered from: the latest touch there is).
 * 3. `last_touch`: the visitor cookie's latest touch with attribution values (a code, a campaign, UTM or
 *    sub ids, a click id) within the window: last non-direct click wins, even over a later direct visit.
 * 4. `last_direct`: else its latest direct touch (a visit from a referring site) within the window.
 * 5. `none`.
 *
 * Bots never win; touches of other brands never reach this function (they are read per brand).
 */
interface TouchLite {
  id: number
  direct: number
  bot: number
  createdAt: number
}

export type WonBy = 'install' | 'registration_body' | 'last_touch' | 'last_direct' | 'none'

/** A touch that may win a registration at `now`: not a bot's, and within the window. */
export const canWin = (t: TouchLite, now: number, windowMs: number) =>
  t.bot === 0 && t.createdAt <= now && t.createdAt >= now - windowMs

export function chooseTouch(
  visitorTouches: readonly TouchLite[],
  opts: { now: number; windowMs: number; installTouch?: TouchLite | null; bodyTouch?: TouchLite | null },
): { touchId: number | null; wonBy: WonBy; considered: number[] } {
  const inWindow = visitorTouches.filter((t) => canWin(t, opts.now, opts.windowMs))
  const considered = [
    ...(opts.installTouch ? [opts.installTouch.id] : []),
    ...(opts.bodyTouch ? [opts.bodyTouch.id] : []),
    ...visitorTouches.map((t) => t.id),
  ]
  const latest = (list: TouchLite[]) =>
    list.reduce<TouchLite | null>(
      (a, t) => (!a || t.createdAt > a.createdAt || (t.createdAt === a.createdAt && t.id > a.id) ? t : a),
      null,
    )
  if (opts.installTouch && canWin(opts.installTouch, opts.now, opts.windowMs))
    return { touchId: opts.installTouch.id, wonBy: 'install', considered }
  if (opts.bodyTouch && opts.bodyTouch.bot === 0)
    return { touchId: opts.bodyTouch.id, wonBy: 'registration_body', considered }
  const paid = latest(inWindow.filter((t) => t.direct === 0))
  if (paid) return { touchId: paid.id, wonBy: 'last_touch', considered }
  const direct = latest(inWindow.filter((t) => t.direct === 1))
  if (direct) return { touchId: direct.id, wonBy: 'last_direct', considered }
  return { touchId: null, wonBy: 'none', considered }
}
