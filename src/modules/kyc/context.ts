import type { Kernel } from '../../kernel/kernel'
import type { UploadsApi } from '../uploads'

/** What the KYC services work with. */
export interface KycCtx extends Kernel {
  uploads: UploadsApi
}
