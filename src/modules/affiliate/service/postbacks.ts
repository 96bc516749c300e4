import { and, asc, desc, eq, gt, isNull, lte, or, sql } from 'drizzle-orm'
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
import { NO_URL, SETTING_WAIT_MS, wakeParkedPostbacks } from './postback-queue'
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
    const { error, setting } = await send(ctx, p, at)
    await settle(ctx, p, error, ctx.clock.now(), setting)
    if (!error) sent++
  }
  return sent
}

/**
 * What a send came to: '' when it was delivered. `setting`: refused here before anything was sent (the
 * URL, the brand's allowlist, the keys): a matter of settings, not a failure of the affiliate's endpoint;
 * `final` when nothing will ever be sent (the affiliate has no `postback_url`: it wants none), `wait` when
 * staff may still fix it.
 */
type Sent = { error: string; setting?: 'wait' | 'final' }

async function send(ctx: AffiliateCtx, p: typeof postbacks.$inferSelect, now: number): Promise<Sent> {
  const refused = (error: string): Sent => ({ error, setting: 'wait' })
  const [a] = await ctx.db.select().from(affiliates).where(eq(affiliates.id, p.affiliateId))
  if (!a?.postbackUrl) return { error: NO_URL, setting: 'final' }
  // the allowlist of the brand whose conversion this is (an affiliate works for other brands too)
  if (!postbackHostAllowed(a.postbackUrl, await postbackHostsOf(ctx, p.brandId)))
    return refused('postback_url is not on the brand allowlist')
  // resolved again at each send: a name may have been moved to an internal address since it was saved.
  // A name resolving inside is the endpoint's doing (its DNS): it counts toward disabling the endpoint. An
  // internal host written as such was saved while AFFILIATE_POSTBACK_PRIVATE allowed it: a setting
  const host = new URL(a.postbackUrl).hostname
  const internal = await internalTarget(ctx, host, 'refused')
  if (internal && isInternalHost(host)) return refused(`postback_url refused: ${internal}`)
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
  if (!key) return refused('no signing key (POST /manager/affiliates/{id}/postback-keys)')
  try {
    const res = await ctx.fetch(expandPostbackUrl(a.postbackUrl, p.body), {
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
 * and toward disabling it; a refusal by settings is neither and spends no attempt:
 * - no `postback_url` (the affiliate wants none): the postback and the affiliate's other pending ones
 *   (not claimed by another pass) are dead, with `last_error` saying so;
 * - no key yet, a host off the allowlist, an internal address written as such: the postback and the
 *   affiliate's other pending ones of the brand (not claimed) are parked until `SETTING_WAIT_MS` after
 *   they were made (no claim of theirs each hour; the sender's batch stays for the others), woken when
 *   the setting changes (`wakeParkedPostbacks`), and dead when that wait is over (another brand's
 *   allowlist must not switch off the home brand's endpoint, nor a key staff have not created yet lose
 *   the conversions of those hours).
 */
async function settle(
  ctx: AffiliateCtx,
  p: typeof postbacks.$inferSelect,
  error: string,
  now: number,
  setting?: 'wait' | 'final',
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
    if (setting) {
      // this one where the claim is still ours, the others where nobody holds them
      const free = or(ours, lte(postbacks.leaseUntil, now))
      const pending = and(eq(postbacks.affiliateId, p.affiliateId), eq(postbacks.status, 'pending'), free)
      if (setting === 'final') {
        await tx.update(postbacks).set({ status: 'dead', lastError: error, leaseUntil: 0 }).where(pending)
        return
      }
      const ofBrand = and(pending, eq(postbacks.brandId, p.brandId))
      const until = sql`${postbacks.createdAt} + ${SETTING_WAIT_MS}`
      await tx
        .update(postbacks)
        .set({
          status: 'dead',
          lastError: `${error} (not fixed within ${SETTING_WAIT_MS / 86_400_000} days)`,
          leaseUntil: 0,
        })
        .where(and(ofBrand, lte(until, now)))
      await tx
        .update(postbacks)
        .set({ nextAt: until, lastError: error, leaseUntil: 0 })
        .where(and(ofBrand, gt(until, now)))
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
