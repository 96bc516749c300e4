/**
 * CSV of a table (RFC 4180: comma, CRLF, quoted where needed) as a download. Text a spreadsheet would
 * run as a formula (a sub-id `=HYPERLINK(…)` set by anyone's tracker) is prefixed with `'`; numbers stay
 * numbers.
 */
export function csvText(header: string[], rows: (string | number)[][]) {
  const cell = (v: string | number) => {
    if (typeof v === 'number') return String(v)
    const safe = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v
    return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe
  }
  return `${[header, ...rows].map((r) => r.map(cell).join(',')).join('\r\n')}\r\n`
}

/**
 * The answer of a CSV export, downloaded as `name`: its headers on the route's `set`, the text returned
 * (a route answering JSON or CSV validates a text against its 200 schema, never a Response object).
 */
export function csvAnswer(
  set: { headers: Record<string, unknown> },
  name: string,
  table: { header: string[]; rows: (string | number)[][] },
) {
  set.headers['content-type'] = 'text/csv; charset=utf-8'
  set.headers['content-disposition'] = `attachment; filename="${name.replace(/[^A-Za-z0-9._-]/g, '_')}"`
  set.headers['cache-control'] = 'private, no-store'
  return csvText(table.header, table.rows)
}
