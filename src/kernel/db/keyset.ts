import { and, type Column, eq, lt, or, type SQL } from 'drizzle-orm'

/** Where a keyset page resumes: the (time, id) of the last row of the page before. */
export interface KeysetPosition {
  time: number
  id: number
}

/**
 * The rows after `at` in a newest-first (time, id) order: strictly older, or of the same instant with a
 * lower id, so rows of one instant are neither skipped nor repeated and each page is an index range
 * (never an OFFSET). No position: every row.
 */
export const olderThan = (
  time: Column,
  id: Column,
  at: KeysetPosition | null | undefined,
): SQL | undefined => (at ? or(lt(time, at.time), and(eq(time, at.time), lt(id, at.id))) : undefined)
