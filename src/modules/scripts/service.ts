import { and, count, eq } from 'drizzle-orm'
import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import { invalid } from '../../kernel/http/errors'
import type { ScriptsCtx } from './context'
import { refuse } from './errors'
import { scripts } from './schema'

/** Scripts a login may keep; a client that needs more deletes old ones. */
const MAX_SCRIPTS_PER_LOGIN = 100

const view = (s: typeof scripts.$inferSelect) => ({
  id: s.id,
  login: s.login,
  name: s.name,
  script: s.script,
  type: 'private' as const,
  autostart: s.autostart,
})

/** The login, scoped like every account route: a user session its own login, staff any login of the brand. */
async function scriptLogin(
  ctx: ScriptsCtx,
  brand: Brand,
  session: Session,
  login: number,
  fail: () => Error,
) {
  const { account } = await ctx.accounts.loadAccountViewAs(brand, session, login, fail)
  return account.login
}

export async function listScripts(ctx: ScriptsCtx, brand: Brand, session: Session, login: number) {
  const own = await scriptLogin(ctx, brand, session, login, () =>
    invalid('login: not found for this session'),
  )
  const rows = await ctx.db
    .select()
    .from(scripts)
    .where(and(eq(scripts.login, own), eq(scripts.brandId, brand.id)))
    .orderBy(scripts.id)
  return { rows: rows.map(view) }
}

/** Source text a script may hold, in bytes of UTF-8 (a character can take up to four). */
const MAX_SOURCE_BYTES = 65_536

/**
 * The source within its size (400 INVALID_DATA). Well-formed text (no lone UTF-16 surrogate) is every
 * body's rule (kernel/http/safe-text.ts).
 */
function checkSource(input: { name: string; script: string }) {
  const bytes = Buffer.byteLength(input.script, 'utf8')
  if (bytes > MAX_SOURCE_BYTES) throw invalid(`script: ${bytes} bytes of UTF-8; at most ${MAX_SOURCE_BYTES}`)
}

interface ScriptInput {
  login: number
  name: string
  script: string
  autostart?: number
}

export async function addScript(ctx: ScriptsCtx, brand: Brand, session: Session, input: ScriptInput) {
  checkSource(input)
  const fail = (m: string) => refuse('INVALID_ADD_SCRIPT', m)
  const login = await scriptLogin(ctx, brand, session, input.login, () =>
    fail('login not found for this session'),
  )
  const now = ctx.clock.now()
  await ctx.db.transaction(async (tx) => {
    const [{ n }] = await tx.select({ n: count() }).from(scripts).where(eq(scripts.login, login))
    if (n >= MAX_SCRIPTS_PER_LOGIN) throw fail(`a login keeps at most ${MAX_SCRIPTS_PER_LOGIN} scripts`)
    await tx.insert(scripts).values({
      brandId: brand.id,
      login,
      name: input.name,
      script: input.script,
      type: 'private',
      autostart: input.autostart ?? 0,
      createdAt: now,
      updatedAt: now,
    })
  })
  return { data: 'OK' as const }
}

export async function updateScript(
  ctx: ScriptsCtx,
  brand: Brand,
  session: Session,
  input: ScriptInput & { id: number },
) {
  checkSource(input)
  const fail = (m: string) => refuse('INVALID_UPDATE_SCRIPT', m)
  const login = await scriptLogin(ctx, brand, session, input.login, () =>
    fail('login not found for this session'),
  )
  const updated = await ctx.db.transaction((tx) =>
    tx
      .update(scripts)
      .set({
        name: input.name,
        script: input.script,
        type: 'private',
        // omitted autostart keeps the current value
        ...(input.autostart !== undefined ? { autostart: input.autostart } : {}),
        updatedAt: ctx.clock.now(),
      })
      .where(and(eq(scripts.id, input.id), eq(scripts.login, login), eq(scripts.brandId, brand.id)))
      .returning({ id: scripts.id }),
  )
  if (updated.length === 0) throw fail(`script ${input.id} not found for login ${login}`)
  return { data: 'OK' as const }
}

export async function deleteScript(
  ctx: ScriptsCtx,
  brand: Brand,
  session: Session,
  input: { id: number; login: number },
) {
  const fail = (m: string) => refuse('SCRIPT_NOT_FOUND', m)
  const login = await scriptLogin(ctx, brand, session, input.login, () =>
    fail('login not found for this session'),
  )
  const gone = await ctx.db.transaction((tx) =>
    tx
      .delete(scripts)
      .where(and(eq(scripts.id, input.id), eq(scripts.login, login), eq(scripts.brandId, brand.id)))
      .returning({ id: scripts.id }),
  )
  if (gone.length === 0) throw fail(`script ${input.id} not found for login ${login}`)
  return { data: 'OK' as const }
}
