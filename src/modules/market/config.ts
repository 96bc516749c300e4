import { z } from 'zod'
import { type Config, envFlag, moduleConfig } from '../../kernel/config'
import type { TickFilterSettings } from './domain/tick-filter'

/** The market module's environment variables (README: configuration). */
export const MarketEnv = z.object({
  /** The quote simulator: on by default outside production. */
  QUOTE_SIMULATOR: envFlag.optional(),
  QUOTE_SEED: z.coerce.number().int().default(20260101),
  QUOTE_TICK_MS: z.coerce.number().int().min(10).max(60_000).default(500),
  /** Backfill candle history with the simulator when demo data is seeded. */
  SEED_HISTORY: envFlag.default(true),
  /**
   * The demo symbols seeded with their midweek hours on every day of the week: a demo that trades at
   * weekends, and test runs that do not depend on the day they run. Off: forex, metals and CFDs close from
   * Friday evening to Sunday evening, as real venues do.
   */
  DEMO_WEEKEND_TRADING: envFlag.default(false),
  /**
   * The spike filter of incoming quotes (MetaTrader's filter level), for every symbol: a tick whose mid
   * moves more than this percent from the last accepted price is held back, unless the
   * QUOTE_SPIKE_CONFIRM_TICKS ticks after it confirm the new level. 0 turns it off.
   */
  QUOTE_SPIKE_PERCENT: z.coerce.number().min(0).max(1000).default(10),
  QUOTE_SPIKE_CONFIRM_TICKS: z.coerce.number().int().min(0).max(100).default(2),
  /** The widest spread a quote may have, in percent of its mid (0: no bound): a wider one is refused. */
  QUOTE_MAX_SPREAD_PERCENT: z.coerce.number().min(0).max(1000).default(10),
  /**
   * The brands whose staff change what every brand of the deployment shares (symbols, prices), by name,
   * comma-separated. Unset: the first brand (the lowest id), the deployment's own.
   */
  OPERATOR_BRANDS: z
    .string()
    .optional()
    .transform((v) =>
      v
        ? v
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : null,
    ),
})

export interface MarketConfig {
  /** Quote simulator (on by default outside production), its seed and tick interval. */
  simulator: boolean
  seed: number
  tickMs: number
  seedHistory: boolean
  /** Demo symbols seeded with their midweek hours on every day (DEMO_WEEKEND_TRADING). */
  demoWeekendTrading: boolean
  /** OPERATOR_BRANDS; null: the first brand. */
  operatorBrands: string[] | null
  /** QUOTE_SPIKE_PERCENT, QUOTE_SPIKE_CONFIRM_TICKS and QUOTE_MAX_SPREAD_PERCENT. */
  tickFilter: TickFilterSettings
}

/** The market module's settings, read from the environment the kernel read its own from. */
export function marketConfig(config: Config): MarketConfig {
  const e = moduleConfig(config, MarketEnv)
  return {
    simulator: e.QUOTE_SIMULATOR ?? !config.production,
    seed: e.QUOTE_SEED,
    tickMs: e.QUOTE_TICK_MS,
    seedHistory: e.SEED_HISTORY,
    demoWeekendTrading: e.DEMO_WEEKEND_TRADING,
    operatorBrands: e.OPERATOR_BRANDS,
    tickFilter: {
      spikePercent: e.QUOTE_SPIKE_PERCENT,
      confirmTicks: e.QUOTE_SPIKE_CONFIRM_TICKS,
      maxSpreadPercent: e.QUOTE_MAX_SPREAD_PERCENT,
    },
  }
}
