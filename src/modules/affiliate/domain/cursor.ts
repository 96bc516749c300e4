/**
 * The integration API's cursor (spec 4.18): opaque to clients, it holds the (event time, id) of the last
 * row of a page. Pages go descending by (event time, id), so rows of one instant are neither skipped nor
 * repeated, and a page is an index range scan wherever it starts (no OFFSET).
 */
export interface CursorPosition {
  time: number
  id: number
}

export const encodeCursor = (p: CursorPosition) => Buffer.from(`v1.${p.time}.${p.id}`).toString('base64url')

export function decodeCursor(text: string): CursorPosition | null {
  if (text.length > 64 || !/^[A-Za-z0-9_-]+$/.test(text)) return null
  const m = /^v1\.(\d{1,15})\.(\d{1,15})$/.exec(Buffer.from(text, 'base64url').toString())
  if (!m) return null
  return { time: Number(m[1]), id: Number(m[2]) }
}

/**
 * A page of rows read with one more than `size` (newest first by event time and id): whether there is
 * more, and the cursor after the page's last row.
 */
export function pageOf<T extends { eventTime: number; id: number }>(rows: T[], size: number) {
  const list = rows.slice(0, size)
  const last = list[list.length - 1]
  const has_more = rows.length > size
  return {
    list,
    has_more,
    next_cursor: has_more ? encodeCursor({ time: last.eventTime, id: last.id }) : null,
  }
}

/** Page size of the integration API: default 100, at most 1,500 (spec part 8); more is refused. */
export const PAGE_DEFAULT = 100
export const PAGE_MAX = 1_500
