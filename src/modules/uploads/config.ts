import { z } from 'zod'
import { type Config, moduleConfig } from '../../kernel/config'

/** The uploads module's environment variables (README: configuration). */
export const UploadsEnv = z.object({
  /** Files one principal (account, customer, staff member) may store in 24 hours, in a brand. */
  UPLOAD_MAX_FILES_PER_DAY: z.coerce.number().int().min(1).default(50),
  /** Bytes one principal may store in 24 hours, in a brand (200 MiB by default). */
  UPLOAD_MAX_BYTES_PER_DAY: z.coerce
    .number()
    .int()
    .min(1)
    .default(200 * 1024 * 1024),
})

export interface UploadsConfig {
  /** What a principal may store in a rolling window of `windowMs`: files and bytes. */
  budget: { files: number; bytes: number; windowMs: number }
}

/** The uploads module's settings, read from the environment the kernel read its own from. */
export function uploadsConfig(config: Config): UploadsConfig {
  const e = moduleConfig(config, UploadsEnv)
  // a file the per-file limit takes but the day's budget never could would answer 429 for ever
  if (e.UPLOAD_MAX_BYTES_PER_DAY < config.upload.maxBytes)
    throw new Error(
      `UPLOAD_MAX_BYTES_PER_DAY (${e.UPLOAD_MAX_BYTES_PER_DAY}) must be at least UPLOAD_MAX_BYTES (${config.upload.maxBytes})`,
    )
  return {
    budget: { files: e.UPLOAD_MAX_FILES_PER_DAY, bytes: e.UPLOAD_MAX_BYTES_PER_DAY, windowMs: 86_400_000 },
  }
}
