import { and, desc, eq, inArray, sql } from 'drizzle-orm'
import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import { epochSeconds } from '../../kernel/clock'
import type { Queryable } from '../../kernel/db/client'
import { invalid } from '../../kernel/http/errors'
import type { NotificationsCtx } from './context'
import {
  likePattern,
  NOTIFICATION_TOKENS,
  type NotificationLevel,
  type NotificationToken,
  STATUS,
  STRUCTURE,
} from './domain/notification'
import { refuse } from './errors'
import { notifications } from './schema'

/** A row of GET /notify/list, in the order of STRUCTURE. */
type NotificationRow = [
  number,
  string,
  { title: string; body: string },
  number,
  number,
  string,
  number,
  string,
  Record<string, unknown>,
  Record<string, unknown>,
]

export interface NewNotification {
  brandId: number
  /** Account login; 0 for a broadcast of the brand. */
  login: number
  token: NotificationToken
  level: NotificationLevel
  title: string
  body: string
  description?: Record<string, unknown>
  data?: Record<string, unknown>
}

/** Writes a notification in the caller's transaction, so it exists exactly when what it reports does. */
export async function notifyTx(q: Queryable, n: NewNotification, nowMs: number) {
  const [row] = await q
    .insert(notifications)
    .values({
      brandId: n.brandId,
      userId: n.login,
      token: n.token,
      type: NOTIFICATION_TOKENS[n.token],
      level: n.level,
      message: JSON.stringify({ title: n.title, body: n.body }),
      description: JSON.stringify(n.description ?? {}),
      data: JSON.stringify(n.data ?? {}),
      createTime: epochSeconds(nowMs),
    })
    .returning({ id: notifications.id })
  return row.id
}

/**
 * The title or the body holds the pattern, as they read: the stored JSON's keys, quotes and escapes are
 * not matched (LIKE: case-insensitive for ASCII letters only).
 */
const textMatches = (pattern: string) =>
  sql`(${notifications.message} ->> '$.title' like ${pattern} escape '\\' or ${notifications.message} ->> '$.body' like ${pattern} escape '\\')`

/**
 * GET /notify/list: the session login's own notifications, newest first; broadcasts (user id 0) and other
 * logins never appear. `filter` matches the title or the body literally, case-insensitively (ASCII letters).
 */
export async function listNotifications(
  ctx: NotificationsCtx,
  brand: Brand,
  session: Session,
  q: { limit: number; offset: number; filter: string },
) {
  const login = ownLogin(session)
  const rows = await ctx.db
    .select()
    .from(notifications)
    .where(
      and(
        eq(notifications.brandId, brand.id),
        eq(notifications.userId, login),
        q.filter ? textMatches(likePattern(q.filter)) : undefined,
      ),
    )
    .orderBy(desc(notifications.id))
    .limit(q.limit)
    .offset(q.offset)
  return {
    structure: [...STRUCTURE],
    rows: rows.map(
      (r): NotificationRow => [
        r.id,
        r.token,
        JSON.parse(r.message) as { title: string; body: string },
        r.createTime,
        r.openTime,
        r.type,
        r.status,
        r.level,
        JSON.parse(r.description) as Record<string, unknown>,
        JSON.parse(r.data) as Record<string, unknown>,
      ],
    ),
  }
}

/** Marks the session login's notifications read: the given ids, or all of them. */
export async function markRead(
  ctx: NotificationsCtx,
  brand: Brand,
  session: Session,
  input: { ids?: number[]; all?: boolean },
) {
  const login = ownLogin(session)
  if (!input.all && !(input.ids && input.ids.length > 0))
    throw invalid('ids: give the notification ids, or all: true')
  const now = epochSeconds(ctx.clock.now())
  const updated = await ctx.db.transaction((tx) =>
    tx
      .update(notifications)
      .set({ status: STATUS.READ, openTime: now })
      .where(
        and(
          eq(notifications.brandId, brand.id),
          eq(notifications.userId, login),
          eq(notifications.status, STATUS.UNREAD),
          input.all ? undefined : inArray(notifications.id, input.ids ?? []),
        ),
      )
      .returning({ id: notifications.id }),
  )
  return { data: 'OK' as const, updated: updated.length }
}

/** Staff send a message to one login of the brand, or a broadcast (login 0). */
export async function sendNotification(
  ctx: NotificationsCtx,
  brand: Brand,
  input: { login: number; title: string; body: string; level?: NotificationLevel },
) {
  if (input.login !== 0) {
    const a = await ctx.accounts.read.accountIn(brand.id, input.login)
    if (!a) throw refuse('ACCOUNT_NOT_FOUND', 'account not found')
  }
  const id = await ctx.db.transaction((tx) =>
    notifyTx(
      tx,
      {
        brandId: brand.id,
        login: input.login,
        token: 'staff.message',
        level: input.level ?? 'info',
        title: input.title,
        body: input.body,
      },
      ctx.clock.now(),
    ),
  )
  return { id }
}

function ownLogin(session: Session): number {
  if (session.type !== 'SESSION_USER' || !session.login)
    throw refuse('PERMISSION_DENIED', 'notifications are read with an account session')
  return session.login
}
