import { Elysia, t } from 'elysia'
import { doc } from '../../kernel/http/openapi'
import { Id, Int, Ok, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import type { CopyCtx } from './context'
import { feePreview } from './copier/fees'
import { RESYNC_OPENS_IN_REQUEST } from './copier/resync'
import { CUSTOMER, err, IdParam, owner, TAG } from './route-common'
import {
  CopyRecord,
  FeePreview,
  Reward,
  Subscription,
  SubscriptionCreateBody,
  SubscriptionResynced,
  SubscriptionUpdateBody,
} from './route-schemas'
import { transition } from './service/subscription-status'
import {
  acceptTerms,
  createSubscription,
  moveSubscription,
  mySubscriptions,
  ownSubscription,
  SUBSCRIPTIONS_PAGE,
  subscriptionDetail,
  subscriptionRecords,
  subscriptionRewards,
  updateSubscription,
} from './service/subscriptions'

/** How a resync's copies come (copier/resync.ts): the documents of the routes that start one say it. */
const RESYNC_NOTE =
  `up to ${RESYNC_OPENS_IN_REQUEST.server} of them before the answer ` +
  `(${RESYNC_OPENS_IN_REQUEST.edge} at the edge, on Workers), the rest after it (the job ` +
  'copytrade.reconcile: within seconds where a Bun engine runs it; from the Workers cron alone, about 10 a ' +
  'minute, at the price then), so copies of the positions held may follow the answer (GET ' +
  '/copytrade/subscription/{id}/copies lists each once it is decided); `copies_pending` in the answer says how many ' +
  'are still to come'

/** A follower's subscriptions: create, settings, terms, pause and resume, copies, rewards, fees (spec 4.12). */
export const subscriptionRoutes = (ctx: CopyCtx) =>
  new Elysia({ name: 'copytrade-subscription-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .post(
      '/copytrade/subscription',
      ({ brand, session, body }) => createSubscription({ ctx, owner: owner(brand, session), input: body }),
      {
        auth: CUSTOMER,
        body: SubscriptionCreateBody,
        response: {
          200: SubscriptionResynced,
          ...err(
            'INVALID_ACCOUNT',
            'FOLLOWER_NOT_FOUND',
            'MASTER_NOT_FOUND',
            'MASTER_NOT_AVAILABLE',
            'FOLLOWER_MODE_NOT_ALLOWED',
            'SELF_COPY',
            'ALREADY_SUBSCRIBED',
            'TERMS_CHANGED',
            'ACCOUNT_SETTLING',
            'INVALID_CUSTOMER_SESSION',
          ),
        },
        detail: doc(TAG, 'Subscribe a follower account to a master', {
          description:
            'Rules 5-8 of spec 4.12. Settings not given come from the follower profile (404 FOLLOWER_NOT_FOUND ' +
            `without one). The master's open positions are copied at the current price: ${RESYNC_NOTE}. A SUBSCRIPTION_FEE's ` +
            'first period is charged here (settled once the follower has the free margin); a period a subscription of ' +
            'this account to this master already paid is not charged again, nor a management-fee day. 409 ACCOUNT_SETTLING ' +
            "(retry): the account's deposits, withdrawals or copies' closes are still being applied to its subscriptions " +
            '(waited for up to 3 s), one parked in dead letters included until staff retry it.',
        }),
      },
    )
    .get(
      '/copytrade/subscriptions',
      ({ brand, session, query }) => mySubscriptions({ ctx, owner: owner(brand, session), input: query }),
      {
        auth: CUSTOMER,
        ...textInput({
          query: {
            before: t.Optional(Int({ minimum: 1, description: 'next_before of the page before' })),
            limit: t.Optional(
              Int({
                minimum: 1,
                maximum: SUBSCRIPTIONS_PAGE.max,
                description: `rows per page (default ${SUBSCRIPTIONS_PAGE.default}, at most ${SUBSCRIPTIONS_PAGE.max})`,
              }),
            ),
          },
        }),
        response: {
          200: t.Object({
            rows: t.Array(Subscription),
            next_before: Int({ description: 'the `before` of the next page; 0 on the last' }),
          }),
        },
        detail: doc(TAG, "The customer's subscriptions", {
          description:
            `Newest first, ${SUBSCRIPTIONS_PAGE.default} a page by default (\`limit\` up to ${SUBSCRIPTIONS_PAGE.max}): ` +
            'pass `next_before` as `before` for the next page (0 on the last). A limit out of range is 400 INVALID_DATA naming limit.',
        }),
      },
    )
    .get(
      '/copytrade/subscription/:id',
      ({ brand, session, params }) =>
        subscriptionDetail({ ctx, owner: owner(brand, session), id: params.id }),
      {
        auth: CUSTOMER,
        ...textInput({ params: IdParam('subscription') }),
        response: { 200: Subscription, ...err('SUBSCRIPTION_NOT_FOUND', 'PERMISSION_DENIED') },
        detail: doc(TAG, 'One subscription'),
      },
    )
    .put(
      '/copytrade/subscription/:id',
      ({ brand, session, params, body }) =>
        updateSubscription({ ctx, owner: owner(brand, session), id: params.id, input: body }),
      {
        auth: CUSTOMER,
        ...textInput({ params: IdParam('subscription') }),
        body: SubscriptionUpdateBody,
        response: {
          200: SubscriptionResynced,
          ...err('SUBSCRIPTION_NOT_FOUND', 'PERMISSION_DENIED', 'INVALID_TRANSITION'),
        },
        detail: doc(TAG, "Change a subscription's settings", {
          description: `They apply to the next copies, and to a copy decided but not yet placed (it is decided again on them); the master's open positions not yet copied are copied now, at the current price: ${RESYNC_NOTE}. Merged onto the settings as they are: a change another request commits at the same time is kept too (409 INVALID_TRANSITION "changed meanwhile; read it again" only when they keep changing under it, or the subscription is disabled).`,
        }),
      },
    )
    .post(
      '/copytrade/subscription/:id/terms',
      ({ brand, session, params, body }) =>
        acceptTerms({ ctx, owner: owner(brand, session), id: params.id, input: body }),
      {
        auth: CUSTOMER,
        ...textInput({ params: { id: Id('subscription id') } }),
        body: t.Object(
          {
            version: Int({
              minimum: 1,
              description: "the master's policy version being accepted (reward_policy of the marketplace)",
            }),
          },
          { example: { version: 1 } },
        ),
        response: {
          200: Subscription,
          ...err(
            'SUBSCRIPTION_NOT_FOUND',
            'PERMISSION_DENIED',
            'MASTER_NOT_FOUND',
            'INVALID_TRANSITION',
            'TERMS_CHANGED',
            'ACCOUNT_SETTLING',
          ),
        },
        detail: doc(TAG, "Accept the master's current terms (reward policy) for a subscription", {
          description:
            "A subscription pays on the terms its follower accepted (`terms`); a master's change of its reward policy applies to new subscriptions, and to this one only once accepted here (`terms_pending` says there is something to accept). `version` must be the master's current policy version (GET /copytrade/masters/{id}: `policy_version`), else 409 TERMS_CHANGED: the terms changed again since they were read. The old terms are settled first: a performance fee due on the gains so far and the management fee's whole days are charged at the old rates, and the high-water mark then starts at the copy equity (or stays where it was, if the equity is below it), so gains made before are never charged at the new rate. The new fee schedule starts now; a subscription-fee period already paid runs to its end. 409 INVALID_TRANSITION: another reward policy while copies are open (accept it once they are closed: a per-trade fee of either terms would charge their result again, or never), or the subscription changed meanwhile (a deposit or withdrawal; accept again). 409 ACCOUNT_SETTLING: another reward policy while a copy's close (or a deposit or withdrawal) is still being applied to the subscription (one parked in dead letters included until staff retry it), after waiting up to 3 s for it (retry): its result is charged on the terms it closed under.",
        }),
      },
    )
    .post(
      '/copytrade/subscription/:id/:action',
      ({ brand, session, params, body }) =>
        moveSubscription({
          ctx,
          owner: owner(brand, session),
          id: params.id,
          input: { action: params.action, reason: body.reason || `${params.action} by the customer` },
        }),
      {
        auth: CUSTOMER,
        ...textInput({
          params: {
            id: Id('subscription id'),
            action: t.UnionEnum(['pause', 'resume', 'disable'], {
              default: undefined,
              description: 'the transition',
              example: 'pause',
            }),
          },
        }),
        body: t.Object(
          { reason: t.Optional(t.String({ maxLength: 200, description: 'kept as the status reason' })) },
          { example: { reason: 'holiday' } },
        ),
        response: {
          200: SubscriptionResynced,
          ...err('SUBSCRIPTION_NOT_FOUND', 'PERMISSION_DENIED', 'INVALID_TRANSITION'),
        },
        detail: doc(TAG, 'Pause, resume or disable a subscription', {
          optionalBody: true,
          description:
            'Status table (spec 3.5, designed here): ACTIVE -pause-> PAUSED -resume-> ACTIVE; ACTIVE or PAUSED ' +
            '-disable-> DISABLED (final; its copies are closed). PAUSED copies nothing new but still copies the ' +
            'closes of positions already copied. Resume copies the master positions opened meanwhile, at the current ' +
            `price: ${RESYNC_NOTE}. Any other ` +
            'move: 409 INVALID_TRANSITION. A pause (and a disable) stops the fee clock: it charges what the terms owe ' +
            "up to now in the same transaction (the management fee's days up to and including today, a subscription-fee " +
            'period that came due); a disable also charges the performance fee on the gains so far, gains of copies kept ' +
            'open while paused included. A resume starts the clock again (the day of the resume counts).',
        }),
      },
    )
    .delete(
      '/copytrade/subscription/:id',
      async ({ brand, session, params }) => {
        const s = await ownSubscription(ctx, owner(brand, session), params.id)
        if (s.status !== 2)
          await transition({
            ctx,
            subscription: s,
            input: { action: 'disable', reason: 'deleted by the customer' },
          })
        return { data: 'OK' as const }
      },
      {
        auth: CUSTOMER,
        ...textInput({ params: IdParam('subscription') }),
        response: { 200: Ok, ...err('SUBSCRIPTION_NOT_FOUND', 'PERMISSION_DENIED') },
        detail: doc(TAG, 'Delete (disable) a subscription', {
          description: 'The same as disable; the record stays for its history and rewards.',
        }),
      },
    )
    .get(
      '/copytrade/subscription/:id/copies',
      ({ brand, session, params, query }) =>
        subscriptionRecords({ ctx, owner: owner(brand, session), id: params.id, input: query }),
      {
        auth: CUSTOMER,
        ...textInput({
          params: IdParam('subscription'),
          query: {
            result: t.Optional(
              t.UnionEnum(['copied', 'skipped'], {
                default: undefined,
                description: 'only copies or only skips',
              }),
            ),
            before: t.Optional(Int({ minimum: 1, description: 'next_before of the page before' })),
            limit: t.Optional(Int({ minimum: 1, maximum: 500, description: 'rows per page (default 100)' })),
          },
        }),
        response: {
          200: t.Object({ rows: t.Array(CopyRecord), next_before: Int() }),
          ...err('SUBSCRIPTION_NOT_FOUND', 'PERMISSION_DENIED'),
        },
        detail: doc(TAG, 'What the copier did: copies and skips with their reasons and timings', {
          description:
            'One row per action (open, fill, close, partial_close, modify, stop): copied, with the fill times and prices and ' +
            'the slippage, or skipped with a stable reason (README: skip reasons).',
        }),
      },
    )
    .get(
      '/copytrade/subscription/:id/rewards',
      ({ brand, session, params }) =>
        subscriptionRewards({ ctx, owner: owner(brand, session), id: params.id }),
      {
        auth: CUSTOMER,
        ...textInput({ params: IdParam('subscription') }),
        response: {
          200: t.Object({ rows: t.Array(Reward) }),
          ...err('SUBSCRIPTION_NOT_FOUND', 'PERMISSION_DENIED'),
        },
        detail: doc(TAG, 'Rewards accrued and settled for a subscription'),
      },
    )
    .get(
      '/copytrade/subscription/:id/fees',
      async ({ brand, session, params }) =>
        feePreview(ctx, await ownSubscription(ctx, owner(brand, session), params.id)),
      {
        auth: CUSTOMER,
        ...textInput({ params: IdParam('subscription') }),
        response: { 200: FeePreview, ...err('SUBSCRIPTION_NOT_FOUND', 'PERMISSION_DENIED') },
        detail: doc(TAG, 'Fee preview: the copy equity, its high-water mark and what would be charged now', {
          description:
            'Copy equity = capital (start balance + deposits - withdrawals) + realized result of copies (closes ' +
            'still being applied included) - rewards paid - rewards owed + floating result of open copies; ' +
            "managed_equity the same with its money capped at its share of the account's balance. " +
            'performance_fee_now is what PERFORMANCE_FEE_HWM would ' +
            'charge if the period ended now, and what a withdrawal or the end of the subscription charges on the ' +
            'gains so far, paused or not (a pause stops the fee clock, not the high-water mark: gains of copies ' +
            'kept open while paused are charged then too); management_fee_per_day what MANAGEMENT_FEE accrues ' +
            'on managed_equity for each UTC day the fee clock runs in (the day it stops included).',
        }),
      },
    )
