import type { AlertRow } from './schema'

/** An alert as the API shows it (4.5). */
export const alertView = (r: AlertRow) => ({
  id: r.id,
  login: r.login,
  symbol: r.symbol,
  indicator_name: r.indicatorName,
  message: r.message,
  side: r.side,
  condition: r.condition,
  target_price: r.targetPrice,
  channel_low: r.channelLow,
  channel_high: r.channelHigh,
  move_threshold: r.moveThreshold,
  repeat_mode: r.repeatMode,
  expires_at: r.expiresAt,
  reference_price: r.referencePrice,
  reference_time: r.referenceTime,
  active: r.active,
  fired_count: r.firedCount,
  last_fired_at: r.lastFiredAt,
  last_price: r.lastPrice,
  created_time: Math.floor(r.createdAt / 1000),
})
