import { type AnyColumn, inArray, sql } from 'drizzle-orm'
import type { GroupNameUse } from '../accounts'
import { CHALLENGE, PURCHASE } from './domain/purchase'
import { propChallenges, propPrograms, propPurchases } from './schema'

/**
 * Why a group may not be renamed (accounts' GroupNamesPort): prop finds groups by the name its steps hold
 * (a purchase opens its first account in the first step's group, a pass opens the next phase's account in
 * the next step's), so a renamed group would fail every purchase of a program naming it (400
 * INVALID_DEMO_GROUP) and make every pass into it fail and be retried. In use: a program of the brand
 * names it (active or not: it can be enabled again), or a purchase still under way or with its challenge
 * still running names it in the steps it was bought with. Read in `q`, the rename's write transaction.
 */
export const propGroupNames: GroupNameUse = async (q, brandId, name) => {
  const namesIt = (steps: AnyColumn) =>
    sql`exists (select 1 from json_each(${steps}) s where json_extract(s.value, '$.account_group') = ${name})`
  const [program] = await q.all<{ name: string }>(
    sql`select ${propPrograms.name} from ${propPrograms}
      where ${propPrograms.brandId} = ${brandId} and ${namesIt(propPrograms.steps)}
      order by ${propPrograms.id} limit 1`,
  )
  if (program) return `prop program ${program.name} names it in its steps; change the program first`
  const underWay = [PURCHASE.pending, PURCHASE.paid, PURCHASE.account_created]
  const running = [CHALLENGE.pending, CHALLENGE.active]
  const [purchase] = await q.all<{ id: number }>(
    sql`select ${propPurchases.id} from ${propPurchases} where ${propPurchases.brandId} = ${brandId}
      and (${inArray(propPurchases.status, underWay)} or exists (select 1 from ${propChallenges}
        where ${propChallenges.purchaseId} = ${propPurchases.id} and ${inArray(propChallenges.status, running)}))
      and ${namesIt(propPurchases.steps)}
      order by ${propPurchases.id} limit 1`,
  )
  return purchase
    ? `prop purchase ${purchase.id} opens its challenge's accounts in it (the steps it was bought with)`
    : null
}
