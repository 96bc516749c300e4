import { and, asc, desc, eq, isNull, lte, ne, or, sql } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import type { AffiliateCtx } from '../context'
import { postbackHostAllowed } from '../domain/hosts'
import { isInternalHost } from '../domain/internal-address'
import {
  backoffMs,
  ENDPOINT_FAILURE_LIMIT,
  expandPostbackUrl,
  MAX_ATTEMPTS,
  signPostback,
} from '../domain/postback'
import { refuse } from '../errors'
import { PostbackEndpointDisabled } from '../events'
import { affiliateAccess, affiliates, postbackKeys, postbacks } from '../schema'
import { homeAffiliate } from './affiliates'
import { internalTarget } from './egress'
import { BACKOFF_MAX_MS, NO_URL, SETTING_WAIT_MS, wakeParkedPostbacks } from './postback-queue'
import { postbackHostsOf } from './settings'

const BATCH = 50
const LEASE_MS = 30_000
const TIMEOUT_MS = 5_000

/** A new signing key: the secret is shown once; it signs from now on, older keys stay known until deleted. */
/** Signing keys are the affiliate's own: staff of its home brand only (another brand's: 403 NOT_HOME_BRAND). */
export async function createPostbackKey(ctx: AffiliateCtx, brandId: number, affiliateId: number) {
  await homeAffiliate(ctx, brandId, affiliateId)
  const id = `pk_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`
  const secret = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
  await ctx.db.insert(postbackKeys).values({ id, affiliateId, secret, createdAt: ctx.clock.now() })
  // postbacks parked for want of a key go out at the sender's next pass
  await wakeParkedPostbacks(ctx.db, { affiliateId }, ctx.clock.now())
  return { key_id: id, secret }
}

export async function deletePostbackKey(ctx: AffiliateCtx, brandId: number, affiliateId: number, id: string) {
  await homeAffiliate(ctx, brandId, affiliateId)
  const gone = await ctx.db
    .delete(postbackKeys)
    .where(and(eq(postbackKeys.id, id), eq(postbackKeys.affiliateId, affiliateId)))
    .returning({ id: postbackKeys.id })
  if (gone.length === 0) throw refuse('KEY_NOT_FOUND', 'postback key not found')
}

export async function listPostbacks(
  ctx: AffiliateCtx,
  brandId: number,
  q: { status?: 'pending' | 'sent' | 'dead'; affiliate_id?: number; limit?: number },
) {
  const rows = await ctx.db
    .select()
    .from(postbacks)
    .where(
      and(
        eq(postbacks.brandId, brandId),
        q.status ? eq(postbacks.status, q.status) : undefined,
        q.affiliate_id ? eq(postbacks.affiliateId, q.affiliate_id) : undefined,
      ),
    )
    .orderBy(desc(postbacks.id))
    .limit(q.limit ?? 100)
  return {
    rows: rows.map((p) => ({
      id: p.id,
      affiliate_id: p.affiliateId,
      conversion_id: p.conversionId,
      status: p.status,
      attempts: p.attempts,
      next_time: Math.floor(p.nextAt / 1000),
      last_error: p.lastError,
      sent_time: p.sentAt ? Math.floor(p.sentAt / 1000) : 0,
    })),
  }
}

/**
 * The postback sender (a cluster job): claims due postbacks under a lease, sends each to its affiliate's
 * endpoint signed with the newest key, and reschedules a failure with backoff; after MAX_ATTEMPTS a
 * postback is dead (listed for staff), and after ENDPOINT_FAILURE_LIMIT failures in a row the endpoint
 * is disabled with an `affiliate.postback_disabled` event. Redirects are not followed (the allowlist is
 * checked on the URL as sent).
 */
export async function sendDuePostbacks(ctx: AffiliateCtx, now: number) {
  const due = await ctx.db
    .select({ id: postbacks.id })
    .from(postbacks)
    .innerJoin(affiliates, eq(affiliates.id, postbacks.affiliateId))
    .leftJoin(
      affiliateAccess,
      and(
        eq(affiliateAccess.affiliateId, postbacks.affiliateId),
        eq(affiliateAccess.brandId, postbacks.brandId),
      ),
    )
    .where(
      and(
        eq(postbacks.status, 'pending'),
        lte(postbacks.nextAt, now),
        lte(postbacks.leaseUntil, now),
        eq(affiliates.postbackEnabled, 1),
        // a suspended affiliate, or one whose access to the brand is revoked, is sent nothing of its
        // customers (spec 5.5: cut off at once); its postbacks wait, as for a disabled endpoint
        eq(affiliates.status, 'active'),
        or(isNull(affiliateAccess.status), eq(affiliateAccess.status, 'active')),
      ),
    )
    .orderBy(asc(postbacks.id))
    .limit(BATCH)
  let sent = 0
  for (const { id } of due) {
    // each claim from the time it is made: a pass that outlived LEASE_MS (a slow endpoint) claimed rows
    // already free for another instance, which sent them too
    const at = ctx.clock.now()
    // still due: a refusal by a setting earlier in this pass parked the affiliate's other postbacks
    const [p] = await ctx.db
      .update(postbacks)
      .set({ leaseUntil: at + LEASE_MS })
      .where(
        and(
          eq(postbacks.id, id),
          eq(postbacks.status, 'pending'),
          lte(postbacks.nextAt, at),
          lte(postbacks.leaseUntil, at),
        ),
      )
      .returning()
    if (!p) continue
    const { error, refusal } = await send(ctx, p, at)
    await settle(ctx, p, error, ctx.clock.now(), refusal)
    if (!error) sent++
  }
  return sent
}

/**
 * What a send came to: '' when it was delivered. `refusal`: refused here before anything was sent, a
 * matter of settings, not a failure of the affiliate's endpoint (staff may still fix it): what refused
 * it (`url`: no `postback_url`, `host`: off the brand's allowlist, `internal`: an internal address written
 * as such, `key`: no signing key) and the URL it was read with, for settle to confirm it still holds.
 */
type Refusal = { kind: 'url' | 'host' | 'internal' | 'key'; url: string }
type Sent = { error: string; refusal?: Refusal }

async function send(ctx: AffiliateCtx, p: typeof postbacks.$inferSelect, now: number): Promise<Sent> {
  const [a] = await ctx.db.select().from(affiliates).where(eq(affiliates.id, p.affiliateId))
  const url = a?.postbackUrl ?? ''
  const refused = (kind: Refusal['kind'], error: string): Sent => ({ error, refusal: { kind, url } })
  if (!a || !url) return refused('url', NO_URL)
  // the allowlist of the brand whose conversion this is (an affiliate works for other brands too)
  if (!postbackHostAllowed(url, await postbackHostsOf(ctx, p.brandId)))
    return refused('host', 'postback_url is not on the brand allowlist')
  // resolved again at each send: a name may have been moved to an internal address since it was saved.
  // A name resolving inside is the endpoint's doing (its DNS): it counts toward disabling the endpoint. An
  // internal host written as such was saved while AFFILIATE_POSTBACK_PRIVATE allowed it: a setting
  const host = new URL(url).hostname
  const internal = await internalTarget(ctx, host, 'refused')
  if (internal && isInternalHost(host)) return refused('internal', `postback_url refused: ${internal}`)
  if (internal) {
    ctx.logger.log('warn', 'affiliate postback target refused', {
      affiliate: a.id,
      host,
      reason: internal,
    })
    return { error: `postback_url refused: ${internal}` }
  }
  const [key] = await ctx.db
    .select()
    .from(postbackKeys)
    .where(eq(postbackKeys.affiliateId, a.id))
    .orderBy(desc(postbackKeys.createdAt))
    .limit(1)
  if (!key) return refused('key', 'no signing key (POST /manager/affiliates/{id}/postback-keys)')
  try {
    const res = await ctx.fetch(expandPostbackUrl(url, p.body), {
      method: 'POST',
      redirect: 'manual',
      signal: AbortSignal.timeout(TIMEOUT_MS),
      headers: {
        'content-type': 'application/json',
        'x-postback-id': String(p.id),
        'x-postback-key-id': key.id,
        'x-postback-signature': signPostback(key.secret, Math.floor(now / 1000), p.body),
      },
      body: p.body,
    })
    await res.body?.cancel()
    return { error: res.ok ? '' : `HTTP ${res.status}` }
  } catch (e) {
    return { error: e instanceof Error ? e.message.slice(0, 200) : 'send failed' }
  }
}

/**
 * Whether a refusal read by `send` outside any transaction still holds in `tx` (a write transaction:
 * what it reads is what it writes over): a key created, the URL or the brand's allowlist saved
 * meanwhile woke nothing yet parked, so the postbacks must not be parked over the fix.
 */
async function stillRefused(ctx: AffiliateCtx, tx: Tx, p: typeof postbacks.$inferSelect, r: Refusal) {
  const [a] = await tx
    .select({ url: affiliates.postbackUrl })
    .from(affiliates)
    .where(eq(affiliates.id, p.affiliateId))
  if ((a?.url ?? '') !== r.url) return false
  if (r.kind === 'host') return !postbackHostAllowed(r.url, await postbackHostsOf(ctx, p.brandId, tx))
  if (r.kind === 'key') {
    const [key] = await tx
      .select({ id: postbackKeys.id })
      .from(postbackKeys)
      .where(eq(postbackKeys.affiliateId, p.affiliateId))
      .limit(1)
    return !key
  }
  return true
}

/**
 * The endpoint as a notice names it: its scheme and host. A tracker's URL often carries its token in the
 * query or the path (or credentials before the host); the event is stored and may be delivered, so they
 * stay out (staff read the whole URL on the affiliate).
 */
function withoutSecrets(url: string) {
  try {
    return new URL(url).origin
  } catch {
    return ''
  }
}

/**
 * Records a send, where this pass still holds the claim (`p.leaseUntil`, as claimed): a claim lost
 * meanwhile records nothing over what its new holder does. A failure of the endpoint counts an attempt
 * and toward disabling it; a refusal by settings (no `postback_url`, no key yet, a host off the
 * allowlist, an internal address written as such) is neither and spends no attempt. Confirmed in the
 * transaction (fixed meanwhile: the postback is only released, due at once), it parks the postback and
 * the affiliate's other pending ones of the brand made before the claim (not claimed by another pass):
 * - one not parked yet (new, in a failure's backoff, woken by a fix, held while the affiliate was
 *   suspended or its endpoint disabled): parked for `SETTING_WAIT_MS` from now, this first refusal (no
 *   claim of theirs each hour; the sender's batch stays for the others), `last_error` the refusal;
 * - one already parked for it: left as it is, and dead once its park is over and it is refused again
 *   (`… (not fixed within 30 days)`); never before 30 days after it was made.
 * A fix of the setting wakes them (`wakeParkedPostbacks`: due at once, `last_error` cleared, so a
 * refusal after it is a first one again). Another brand's allowlist must not switch off the home brand's
 * endpoint, nor a key staff have not created yet, or a URL cleared by mistake, lose those conversions.
 */
async function settle(
  ctx: AffiliateCtx,
  p: typeof postbacks.$inferSelect,
  error: string,
  now: number,
  refusal?: Refusal,
) {
  const attempts = p.attempts + 1
  await ctx.uow.run(async (tx, work) => {
    const ours = and(eq(postbacks.id, p.id), eq(postbacks.leaseUntil, p.leaseUntil))
    if (!error) {
      const [mine] = await tx
        .update(postbacks)
        .set({ status: 'sent', attempts, sentAt: now, lastError: '', leaseUntil: 0 })
        .where(ours)
        .returning({ id: postbacks.id })
      if (mine)
        await tx.update(affiliates).set({ postbackFailures: 0 }).where(eq(affiliates.id, p.affiliateId))
      return
    }
    if (refusal) {
      if (!(await stillRefused(ctx, tx, p, refusal))) {
        await tx.update(postbacks).set({ leaseUntil: 0 }).where(ours)
        return
      }
      // this one where the claim is still ours, the others where nobody holds them and made before it
      // was claimed (what was made since was not read by this send)
      const claimedAt = p.leaseUntil - LEASE_MS
      const ofBrand = and(
        eq(postbacks.affiliateId, p.affiliateId),
        eq(postbacks.brandId, p.brandId),
        eq(postbacks.status, 'pending'),
        lte(postbacks.createdAt, claimedAt),
        or(ours, lte(postbacks.leaseUntil, now)),
      )
      // parked for this very refusal, its park over (a fix would have woken it and cleared its error)
      await tx
        .update(postbacks)
        .set({
          status: 'dead',
          lastError: `${error} (not fixed within ${SETTING_WAIT_MS / 86_400_000} days)`,
          leaseUntil: 0,
        })
        .where(
          and(
            ofBrand,
            eq(postbacks.lastError, error),
            lte(postbacks.nextAt, now),
            lte(sql`${postbacks.createdAt} + ${SETTING_WAIT_MS}`, now),
          ),
        )
      // the others not parked for it yet: parked from this first refusal
      await tx
        .update(postbacks)
        .set({ nextAt: now + SETTING_WAIT_MS, lastError: error, leaseUntil: 0 })
        .where(
          and(
            ofBrand,
            lte(postbacks.nextAt, now + BACKOFF_MAX_MS),
            or(ne(postbacks.lastError, error), lte(postbacks.nextAt, now)),
          ),
        )
      return
    }
    const [mine] = await tx
      .update(postbacks)
      .set({
        status: attempts >= MAX_ATTEMPTS ? 'dead' : 'pending',
        attempts,
        nextAt: now + backoffMs(attempts),
        lastError: error,
        leaseUntil: 0,
      })
      .where(ours)
      .returning({ id: postbacks.id })
    if (!mine) return
    const [a] = await tx
      .update(affiliates)
      .set({ postbackFailures: sql`${affiliates.postbackFailures} + 1` })
      .where(eq(affiliates.id, p.affiliateId))
      .returning()
    if (a.postbackEnabled === 1 && a.postbackFailures >= ENDPOINT_FAILURE_LIMIT) {
      const reason = `${a.postbackFailures} failures in a row; last: ${error}`
      await tx
        .update(affiliates)
        .set({ postbackEnabled: 0, postbackDisabledReason: reason })
        .where(eq(affiliates.id, a.id))
      work.emit(PostbackEndpointDisabled, a.brandId, {
        affiliate_id: a.id,
        url: withoutSecrets(a.postbackUrl),
        failures: a.postbackFailures,
        last_error: error,
      })
      ctx.logger.log('warn', 'affiliate postback endpoint disabled', { affiliate: a.id, reason })
    }
  })
}
