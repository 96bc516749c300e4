import { z } from 'zod'

/** Spec 2.16.1 enumerations. */
const COPY_MODE = { FULL_SYNC: 0, OPEN_ONLY: 1, CLOSE_ONLY: 2 } as const
export const VOLUME_MODE = { FIXED: 0, MULTIPLIER: 1, EQUITY_RATIO: 2, BALANCE_RATIO: 3 } as const
const SYMBOLS_MODE = { ALL: 0, INCLUDE: 1, EXCLUDE: 2 } as const
const FOLLOWER_MODES = { REAL_ONLY: 0, DEMO_ONLY: 1, REAL_AND_DEMO: 2 } as const
export const MANUAL_TRADING = { DISABLED: 0, ALLOW_NON_COPIED: 1, ALLOW_ALL: 2 } as const

/**
 * A subscription's copy settings (a follower's defaults have the same shape). Volumes are hundredths of
 * a lot, the unit of the trade routes; 0 in a limit means "no limit".
 */
export const SubscriptionSettings = z
  .object({
    copy_mode: z.number().int().min(0).max(2).default(COPY_MODE.FULL_SYNC),
    volume_mode: z.number().int().min(0).max(3).default(VOLUME_MODE.MULTIPLIER),
    /** FIXED: the volume (hundredths of a lot); MULTIPLIER: the factor; the ratios: a factor on the ratio. */
    volume_param: z.number().positive().max(1_000_000).default(1),
    symbols_mode: z.number().int().min(0).max(2).default(SYMBOLS_MODE.ALL),
    symbols: z.array(z.string().min(1).max(32)).max(200).default([]),
    min_volume: z.number().int().min(0).max(100_000_000).default(0),
    max_volume: z.number().int().min(0).max(100_000_000).default(0),
    max_positions: z.number().int().min(0).max(10_000).default(0),
    copy_sl_tp: z.number().int().min(0).max(1).default(1),
    reverse: z.number().int().min(0).max(1).default(0),
    /** Largest distance (points) between the master's fill and the follower's price; 0: no guard. */
    max_slippage_points: z.number().int().min(0).max(1_000_000).default(0),
    /** An open signal older than this (seconds since the master's fill) is not copied. */
    open_ttl_seconds: z.number().int().min(1).max(86_400).default(60),
    /** Equity stop: a loss of the copied capital that closes every copy and pauses; 0: none. */
    equity_stop: z.number().min(0).max(1_000_000_000).default(0),
    /** 0: `equity_stop` is an amount in the follower's currency; 1: a percent of the start balance. */
    equity_stop_type: z.number().int().min(0).max(1).default(0),
    /** Realized loss of copies in one UTC day after which no new copy opens until the next day; 0: none. */
    daily_loss_limit: z.number().min(0).max(1_000_000_000).default(0),
  })
  .strict()
  .superRefine((s, c) => {
    if (s.max_volume > 0 && s.min_volume > s.max_volume)
      c.addIssue({ code: 'custom', path: ['min_volume'], message: 'is above max_volume' })
    if (s.symbols_mode !== SYMBOLS_MODE.ALL && s.symbols.length === 0)
      c.addIssue({ code: 'custom', path: ['symbols'], message: 'required when symbols_mode is 1 or 2' })
    if (s.volume_mode === VOLUME_MODE.FIXED && !Number.isInteger(s.volume_param))
      c.addIssue({ code: 'custom', path: ['volume_param'], message: 'FIXED takes hundredths of a lot' })
    if (s.equity_stop_type === 1 && s.equity_stop > 100)
      c.addIssue({ code: 'custom', path: ['equity_stop'], message: 'a percent is at most 100' })
  })
export type SubscriptionSettings = z.infer<typeof SubscriptionSettings>

/** Whether the subscription's symbol filter lets `symbol` through. */
export function symbolAllowed(s: Pick<SubscriptionSettings, 'symbols_mode' | 'symbols'>, symbol: string) {
  if (s.symbols_mode === SYMBOLS_MODE.INCLUDE) return s.symbols.includes(symbol)
  if (s.symbols_mode === SYMBOLS_MODE.EXCLUDE) return !s.symbols.includes(symbol)
  return true
}

export const copiesOpens = (mode: number) => mode === COPY_MODE.FULL_SYNC || mode === COPY_MODE.OPEN_ONLY
export const copiesCloses = (mode: number) => mode === COPY_MODE.FULL_SYNC || mode === COPY_MODE.CLOSE_ONLY

/** Whether a follower account of `mode` may follow a master allowing `allowed` (rules 7 and 8 of 4.12). */
export function followerModeAllowed(allowed: number, mode: 'REAL' | 'DEMO') {
  if (allowed === FOLLOWER_MODES.REAL_AND_DEMO) return true
  return allowed === (mode === 'REAL' ? FOLLOWER_MODES.REAL_ONLY : FOLLOWER_MODES.DEMO_ONLY)
}
