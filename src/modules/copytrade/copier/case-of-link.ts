import { type SQL, sql } from 'drizzle-orm'
import { copyLinks } from '../schema'

type Link = typeof copyLinks.$inferSelect

/**
 * `case id when <link> then <value> ... end`: one UPDATE sets each link of a chunk its own value (on sqld
 * each statement is a round trip, so the copier moves a chunk's links in one, not one per link).
 */
export function caseOfLink<O extends { link: Pick<Link, 'id'> }>(
  part: O[],
  value: (o: O) => string | number | SQL,
) {
  return sql`case ${copyLinks.id} ${sql.join(
    part.map((o) => sql`when ${o.link.id} then ${value(o)}`),
    sql` `,
  )} end`
}
