import { z } from 'zod'
import { defineTopic } from '../../kernel/events/topic'

const Profile = z.object({ customer_id: z.number().int(), status: z.string(), risk_level: z.string() })

/** Every required step of the profile was submitted. */
export const KycSubmitted = defineTopic('kyc.submitted', Profile)
/** Every required step was approved (affiliate conversions consume it). */
export const KycApproved = defineTopic('kyc.approved', Profile)
/** A step was rejected: the profile is rejected. */
export const KycRejected = defineTopic(
  'kyc.rejected',
  Profile.extend({ step: z.string(), reason: z.string() }),
)
