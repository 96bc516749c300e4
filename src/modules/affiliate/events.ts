import { z } from 'zod'
import { defineTopic } from '../../kernel/events/topic'

/** An affiliate's postback endpoint failed too often in a row and was disabled: staff should look. */
export const PostbackEndpointDisabled = defineTopic(
  'affiliate.postback_disabled',
  z.object({
    affiliate_id: z.number().int(),
    /** the endpoint's scheme and host only: its path, query or credentials may hold a tracker's token */
    url: z.string(),
    failures: z.number().int(),
    last_error: z.string(),
  }),
)
