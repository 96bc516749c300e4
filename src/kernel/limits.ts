/**
 * Ranges every integer input is held to (issue: one request with `expiration: 1e16` once stored a value
 * the driver could not read back, and the server could not start). Integers above 2^53 - 1 are not exact
 * in JavaScript, so no id, login or count may exceed it; times are epoch values of a real calendar range.
 */
export const MAX_ID = Number.MAX_SAFE_INTEGER
/** 2100-01-01T00:00:00Z: the latest expiry, alert time or history bound a client may give. */
export const MAX_EPOCH_SECONDS = 4_102_444_800
export const MAX_EPOCH_MS = MAX_EPOCH_SECONDS * 1000
/** Prices (quotes, SL/TP, pending prices, alert levels): far above any instrument's, far below float trouble. */
export const MAX_PRICE = 1e9
/** Money amounts in major units (balance operations, deposits). */
export const MAX_AMOUNT = 1e12
/** Order volume in hundredths of a lot (1,000,000 lots); the group's lot limits are usually far lower. */
export const MAX_VOLUME = 100_000_000
