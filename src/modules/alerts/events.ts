import { z } from 'zod'
import { defineTopic } from '../../kernel/events/topic'

/** A price alert fired at `price` (its `once` alerts are disabled by then). */
export const AlertFired = defineTopic(
  'alert.fired',
  z.object({
    alert_id: z.number().int(),
    login: z.number().int(),
    symbol: z.string(),
    side: z.number().int(),
    condition: z.number().int(),
    target_price: z.number(),
    channel_low: z.number(),
    channel_high: z.number(),
    move_threshold: z.number(),
    reference_price: z.number(),
    message: z.string(),
    price: z.number(),
    fired_count: z.number().int(),
  }),
)
