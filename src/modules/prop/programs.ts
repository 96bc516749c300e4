import { and, asc, eq, sql } from 'drizzle-orm'
import type { Tx } from '../../kernel/db/client'
import { isUniqueViolation } from '../../kernel/db/errors'
import { invalid, issueText } from '../../kernel/http/errors'
import { fromMinor, toMinor } from '../accounts'
import type { PropCtx } from './context'
import { effectiveLimits, PurchaseLimits } from './domain/limits'
import { type GroupFacts, ProgramInput, ProgramStep, profitSplit, programProblem } from './domain/program'
import { refuse } from './errors'
import { propPrograms } from './schema'

export type ProgramRow = typeof propPrograms.$inferSelect

export const programNotFound = (id: number) => refuse('PROGRAM_NOT_FOUND', `program ${id} not found`)

export function programView(p: ProgramRow) {
  const steps = ProgramStep.array().parse(JSON.parse(p.steps))
  return {
    id: p.id,
    name: p.name,
    description: p.description,
    price: fromMinor(p.priceMinor, p.currency),
    currency: p.currency,
    active: p.active === 1,
    time_zone: p.timeZone,
    version: p.version,
    profit_split: profitSplit(steps),
    steps: steps.map((s, i) => ({ index: i + 1, ...s })),
    limits: programLimits(p),
    limits_default: p.limits === null,
    created_time: Math.floor(p.createdAt / 1000),
    updated_time: Math.floor(p.updatedAt / 1000),
  }
}

/** The purchase limits that apply to a program (its own, or the default for a free program). */
export const programLimits = (p: ProgramRow) =>
  effectiveLimits(p.limits === null ? null : PurchaseLimits.parse(JSON.parse(p.limits)), p.priceMinor)

export async function programRow(ctx: PropCtx, brandId: number, id: number) {
  const [p] = await ctx.db
    .select()
    .from(propPrograms)
    .where(and(eq(propPrograms.id, id), eq(propPrograms.brandId, brandId)))
  if (!p) throw programNotFound(id)
  return p
}

export async function listPrograms(ctx: PropCtx, brandId: number, activeOnly: boolean) {
  const rows = await ctx.db
    .select()
    .from(propPrograms)
    .where(
      activeOnly
        ? and(eq(propPrograms.brandId, brandId), eq(propPrograms.active, 1))
        : eq(propPrograms.brandId, brandId),
    )
    .orderBy(asc(propPrograms.priceMinor), asc(propPrograms.id))
  return { rows: rows.map(programView) }
}

/** Parses a program as staff send it; 400 INVALID_DATA naming the first field at fault. */
function parsed(input: unknown) {
  const r = ProgramInput.safeParse(input)
  if (!r.success) {
    throw invalid(issueText(r.error.issues[0]!))
  }
  const p = r.data
  const price = toMinor(p.price, p.currency)
  return { p, price }
}

/**
 * Checks a program against the brand's groups its steps name, read in `tx`, the transaction that writes
 * the program: a group rename (refused while a program names the group, accounts' GROUP_IN_USE, checked
 * in the rename's transaction) commits either before, and is seen here, or after, and sees the program.
 */
async function checked(ctx: PropCtx, tx: Tx, brandId: number, p: ProgramInput, price: number | null) {
  const groups = new Map<string, GroupFacts>()
  for (const s of p.steps) {
    const g = await ctx.accounts.findGroup(brandId, s.account_group, tx)
    if (g) groups.set(g.name, { accountMode: g.accountMode, currency: g.currency })
  }
  const problem = programProblem(p, groups)
  if (problem) throw invalid(problem)
  if (price === null) throw invalid(`price: at most the decimals of ${p.currency}`)
  return price
}

const values = (p: ProgramInput, price: number) => ({
  name: p.name,
  description: p.description,
  priceMinor: price,
  currency: p.currency,
  active: p.active ? 1 : 0,
  timeZone: p.time_zone,
  steps: JSON.stringify(p.steps),
  limits: p.limits === undefined ? null : JSON.stringify(p.limits),
})

const nameTaken = (e: unknown, name: string) =>
  isUniqueViolation(e) ? refuse('PROGRAM_NAME_TAKEN', `a program named ${name} exists`) : e

export async function createProgram(ctx: PropCtx, brandId: number, input: unknown) {
  const { p, price } = parsed(input)
  try {
    const row = await ctx.db.transaction(async (tx) => {
      const minor = await checked(ctx, tx, brandId, p, price)
      const now = ctx.clock.now()
      const [r] = await tx
        .insert(propPrograms)
        .values({ brandId, ...values(p, minor), createdAt: now, updatedAt: now })
        .returning()
      return r!
    })
    return programView(row)
  } catch (e) {
    throw nameTaken(e, p.name)
  }
}

/** Replaces a program; its version goes up. Running challenges keep the rules they were bought with. */
export async function updateProgram(ctx: PropCtx, brandId: number, id: number, input: unknown) {
  await programRow(ctx, brandId, id)
  const { p, price } = parsed(input)
  try {
    const row = await ctx.db.transaction(async (tx) => {
      const minor = await checked(ctx, tx, brandId, p, price)
      const [r] = await tx
        .update(propPrograms)
        .set({ ...values(p, minor), version: sql`${propPrograms.version} + 1`, updatedAt: ctx.clock.now() })
        .where(and(eq(propPrograms.id, id), eq(propPrograms.brandId, brandId)))
        .returning()
      if (!r) throw programNotFound(id)
      return r
    })
    return programView(row)
  } catch (e) {
    throw nameTaken(e, p.name)
  }
}

export async function setProgramActive(ctx: PropCtx, brandId: number, id: number, active: boolean) {
  await programRow(ctx, brandId, id)
  const [row] = await ctx.db
    .update(propPrograms)
    .set({ active: active ? 1 : 0, updatedAt: ctx.clock.now() })
    .where(and(eq(propPrograms.id, id), eq(propPrograms.brandId, brandId)))
    .returning()
  return programView(row!)
}
