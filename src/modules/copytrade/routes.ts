import { Elysia, t } from 'elysia'
import { ANY_SESSION } from '../../kernel/auth/session'
import { doc, errors } from '../../kernel/http/openapi'
import { Id, Int, Login, Ok, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import type { CopyCtx } from './context'
import { feePreview } from './copier/fees'
import {
  CopyRecord,
  FeePreview,
  Follower,
  FollowerBody,
  FollowerSettingsBody,
  Master,
  MasterCreateBody,
  MasterFollowers,
  MasterTrades,
  MasterUpdateBody,
  PublicMaster,
  Reward,
  StaffSubscription,
  Subscription,
  SubscriptionCreateBody,
  SubscriptionUpdateBody,
} from './route-schemas'
import { type CopyCode, codesOf } from './service/errors'
import { createFollower, deleteFollower, myFollowers, updateFollower } from './service/followers'
import { marketMaster, marketplace, masterFollowers, masterTrades, SORT_KEYS } from './service/marketplace'
import { createMaster, deleteMaster, myMasters, updateMaster } from './service/masters'
import {
  staffDisableMaster,
  staffDisableSubscription,
  staffMasters,
  staffSubscriptions,
} from './service/staff'
import { transition } from './service/subscription-status'
import {
  acceptTerms,
  createSubscription,
  mySubscriptions,
  ownSubscription,
  subscriptionDetail,
  subscriptionRecords,
  subscriptionRewards,
  updateSubscription,
} from './service/subscriptions'
import { masterView } from './views'

const CUSTOMER = {
  roles: ['SESSION_CUSTOMER'] as const,
  denied: { status: 403, code: 'INVALID_CUSTOMER_SESSION' },
}
const ANY = { roles: ANY_SESSION }
const STAFF = { roles: ['SESSION_MANAGER', 'SESSION_ADMIN'] as const }
const TAG = 'Copy trading'
const STAFF_TAG = 'Copy trading back office'
const err = (...codes: CopyCode[]) => errors(codesOf(...codes))
const owner = (brand: { id: number }, session: { customerId?: number }) => ({
  brandId: brand.id,
  customerId: session.customerId!,
})
const IdParam = (what: string, example = 1) => ({ id: Id(`${what} id`, example) })
const LoginParam = { login: Login }

/** Customer routes of spec 4.12 (paths and payloads designed here; README.md of this folder). */
export const copyRoutes = (ctx: CopyCtx) =>
  new Elysia({ name: 'copytrade-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .get('/copytrade/masters', ({ brand, query }) => marketplace(ctx, brand.id, query), {
      auth: ANY,
      ...textInput({
        query: {
          sort: t.Optional(t.UnionEnum(SORT_KEYS, { default: undefined, description: 'default roi' })),
          order: t.Optional(
            t.UnionEnum(['asc', 'desc'], {
              default: undefined,
              description: 'default desc (asc for max_drawdown)',
            }),
          ),
          currency: t.Optional(
            t.String({ pattern: '^[A-Z]{3}$', description: "the master account's currency" }),
          ),
          reward_type: t.Optional(
            Int({ minimum: 0, maximum: 4, description: 'only masters with this reward_type' }),
          ),
          min_roi_pct: t.Optional(
            Int({ minimum: -100, maximum: 100_000, description: 'ROI at least, percent' }),
          ),
          max_drawdown_pct: t.Optional(
            Int({ minimum: 0, maximum: 100, description: 'max drawdown at most, percent' }),
          ),
          min_trades: t.Optional(Int({ minimum: 0, description: 'closed trades at least' })),
          search: t.Optional(t.String({ maxLength: 64, description: 'part of the name' })),
          limit: t.Optional(Int({ minimum: 1, maximum: 100, description: 'rows per page (default 20)' })),
          cursor: t.Optional(t.String({ maxLength: 200, description: 'next_cursor of the page before' })),
        },
      }),
      response: { 200: t.Object({ rows: t.Array(PublicMaster), next_cursor: t.String() }) },
      detail: doc(TAG, 'Marketplace of masters', {
        description:
          'Public, enabled masters of the brand with their statistics (README: definitions), filtered and sorted, ' +
          'a page at a time: pass `next_cursor` as `cursor` for the next page (empty at the end).',
      }),
    })
    .get(
      '/copytrade/masters/:id',
      ({ brand, session, params }) => marketMaster(ctx, brand.id, session.customerId, params.id),
      {
        auth: ANY,
        ...textInput({ params: IdParam('master') }),
        response: { 200: PublicMaster, ...err('MASTER_NOT_FOUND', 'MASTER_NOT_AVAILABLE') },
        detail: doc(TAG, 'One master of the marketplace'),
      },
    )
    .get(
      '/copytrade/master/trades',
      ({ brand, session, query }) => masterTrades(ctx, brand.id, session.customerId, query),
      {
        auth: ANY,
        ...textInput({
          query: {
            master_id: Id('master id'),
            limit: t.Optional(Int({ minimum: 1, maximum: 500, description: 'rows per page (default 50)' })),
            before: t.Optional(Int({ minimum: 1, description: 'next_before of the page before' })),
          },
        }),
        response: { 200: MasterTrades, ...err('MASTER_NOT_FOUND', 'TRADE_HISTORY_NOT_PUBLIC') },
        detail: doc(TAG, "A master's public trade history", {
          description:
            'Any authenticated session (terminal, CRM, staff). Closed trades newest first, when the master has ' +
            'show_trade_history = 1 (its owner always sees them), else 403 TRADE_HISTORY_NOT_PUBLIC.',
        }),
      },
    )
    .get(
      '/copytrade/master/followers',
      ({ brand, session, query }) => masterFollowers(ctx, brand.id, session.customerId, query.master_id),
      {
        auth: ANY,
        ...textInput({ query: { master_id: Id('master id') } }),
        response: { 200: MasterFollowers, ...err('MASTER_NOT_FOUND', 'FOLLOWERS_NOT_PUBLIC') },
        detail: doc(TAG, "A master's public follower statistics", {
          description:
            'Any authenticated session. Counts and per-subscription figures without logins, when the master ' +
            'has show_followers = 1 (its owner always sees them), else 403 FOLLOWERS_NOT_PUBLIC.',
        }),
      },
    )
    .post(
      '/copytrade/master',
      async ({ brand, session, body }) => masterView(await createMaster(ctx, owner(brand, session), body)),
      {
        auth: CUSTOMER,
        body: MasterCreateBody,
        response: {
          200: Master,
          ...err(
            'INVALID_ACCOUNT',
            'MASTER_ACCOUNT_MUST_BE_REAL',
            'REWARD_POLICY_REQUIRED',
            'INVALID_REWARD_POLICY',
            'INVALID_PAYOUT_ACCOUNT',
            'MASTER_EXISTS',
            'INVALID_CUSTOMER_SESSION',
          ),
        },
        detail: doc(TAG, 'Create a master (CreateCopyTradeMaster)', {
          description:
            'Rules 1-3 of spec 4.12: the login must be an account of the session customer (403 INVALID_ACCOUNT) in a ' +
            'REAL group (400 MASTER_ACCOUNT_MUST_BE_REAL), and the reward policy is chosen here (400 ' +
            'REWARD_POLICY_REQUIRED / INVALID_REWARD_POLICY). payout_login defaults to the login and must be an ' +
            'enabled REAL account of the customer (400 INVALID_PAYOUT_ACCOUNT). One profile per login (409 MASTER_EXISTS).',
        }),
      },
    )
    .get(
      '/copytrade/master/mine',
      async ({ brand, session }) => ({ rows: (await myMasters(ctx, owner(brand, session))).map(masterView) }),
      {
        auth: CUSTOMER,
        response: { 200: t.Object({ rows: t.Array(Master) }), ...err('INVALID_CUSTOMER_SESSION') },
        detail: doc(TAG, "The customer's masters"),
      },
    )
    .put(
      '/copytrade/master/:id',
      async ({ brand, session, params, body }) =>
        masterView(await updateMaster(ctx, owner(brand, session), params.id, body)),
      {
        auth: CUSTOMER,
        ...textInput({ params: IdParam('master', 2) }),
        body: MasterUpdateBody,
        response: {
          200: Master,
          ...err(
            'MASTER_NOT_FOUND',
            'PERMISSION_DENIED',
            'INVALID_REWARD_POLICY',
            'INVALID_PAYOUT_ACCOUNT',
            'MASTER_NOT_AVAILABLE',
          ),
        },
        detail: doc(TAG, 'Update a master', {
          description:
            'Only the owner (403 PERMISSION_DENIED). A new reward policy applies to what accrues from now on.',
        }),
      },
    )
    .delete(
      '/copytrade/master/:id',
      async ({ brand, session, params }) => {
        await deleteMaster(ctx, owner(brand, session), params.id)
        return { data: 'OK' as const }
      },
      {
        auth: CUSTOMER,
        ...textInput({ params: IdParam('master', 2) }),
        response: { 200: Ok, ...err('MASTER_NOT_FOUND', 'PERMISSION_DENIED') },
        detail: doc(TAG, 'Delete a master', {
          description:
            'It leaves the marketplace; its live subscriptions become DISABLED and their copies are closed.',
        }),
      },
    )
    .post(
      '/copytrade/follower',
      ({ brand, session, body }) =>
        createFollower(ctx, owner(brand, session), body.login, body.defaults ?? {}),
      {
        auth: CUSTOMER,
        body: FollowerBody,
        response: { 200: Follower, ...err('INVALID_ACCOUNT', 'FOLLOWER_EXISTS', 'INVALID_CUSTOMER_SESSION') },
        detail: doc(TAG, 'Create a follower profile', {
          description:
            'Rule 4: the login must be an account of the customer. `defaults` seed its subscriptions.',
        }),
      },
    )
    .get(
      '/copytrade/follower/mine',
      async ({ brand, session }) => ({ rows: await myFollowers(ctx, owner(brand, session)) }),
      {
        auth: CUSTOMER,
        response: { 200: t.Object({ rows: t.Array(Follower) }) },
        detail: doc(TAG, "The customer's follower profiles"),
      },
    )
    .put(
      '/copytrade/follower/:login',
      ({ brand, session, params, body }) => updateFollower(ctx, owner(brand, session), params.login, body),
      {
        auth: CUSTOMER,
        ...textInput({ params: LoginParam }),
        body: FollowerSettingsBody,
        response: { 200: Follower, ...err('INVALID_ACCOUNT', 'FOLLOWER_NOT_FOUND') },
        detail: doc(TAG, "Change a follower's defaults"),
      },
    )
    .delete(
      '/copytrade/follower/:login',
      async ({ brand, session, params }) => {
        await deleteFollower(ctx, owner(brand, session), params.login)
        return { data: 'OK' as const }
      },
      {
        auth: CUSTOMER,
        ...textInput({ params: LoginParam }),
        response: { 200: Ok, ...err('INVALID_ACCOUNT', 'FOLLOWER_NOT_FOUND', 'ALREADY_SUBSCRIBED') },
        detail: doc(TAG, 'Delete a follower profile', {
          description: 'Refused (409 ALREADY_SUBSCRIBED) while one of its subscriptions is ACTIVE or PAUSED.',
        }),
      },
    )
    .post(
      '/copytrade/subscription',
      ({ brand, session, body }) => createSubscription(ctx, owner(brand, session), body),
      {
        auth: CUSTOMER,
        body: SubscriptionCreateBody,
        response: {
          200: Subscription,
          ...err(
            'INVALID_ACCOUNT',
            'FOLLOWER_NOT_FOUND',
            'MASTER_NOT_FOUND',
            'MASTER_NOT_AVAILABLE',
            'FOLLOWER_MODE_NOT_ALLOWED',
            'SELF_COPY',
            'ALREADY_SUBSCRIBED',
            'INVALID_CUSTOMER_SESSION',
          ),
        },
        detail: doc(TAG, 'Subscribe a follower account to a master', {
          description:
            'Rules 5-8 of spec 4.12. Settings not given come from the follower profile (404 FOLLOWER_NOT_FOUND ' +
            "without one). The master's open positions are copied at once at the current price.",
        }),
      },
    )
    .get(
      '/copytrade/subscriptions',
      async ({ brand, session }) => ({ rows: await mySubscriptions(ctx, owner(brand, session)) }),
      {
        auth: CUSTOMER,
        response: { 200: t.Object({ rows: t.Array(Subscription) }) },
        detail: doc(TAG, "The customer's subscriptions"),
      },
    )
    .get(
      '/copytrade/subscription/:id',
      ({ brand, session, params }) => subscriptionDetail(ctx, owner(brand, session), params.id),
      {
        auth: CUSTOMER,
        ...textInput({ params: IdParam('subscription') }),
        response: { 200: Subscription, ...err('SUBSCRIPTION_NOT_FOUND', 'PERMISSION_DENIED') },
        detail: doc(TAG, 'One subscription'),
      },
    )
    .put(
      '/copytrade/subscription/:id',
      ({ brand, session, params, body }) => updateSubscription(ctx, owner(brand, session), params.id, body),
      {
        auth: CUSTOMER,
        ...textInput({ params: IdParam('subscription') }),
        body: SubscriptionUpdateBody,
        response: {
          200: Subscription,
          ...err('SUBSCRIPTION_NOT_FOUND', 'PERMISSION_DENIED', 'INVALID_TRANSITION'),
        },
        detail: doc(TAG, "Change a subscription's settings", {
          description:
            "They apply to the next copies; the master's open positions not yet copied are copied now.",
        }),
      },
    )
    .post(
      '/copytrade/subscription/:id/terms',
      ({ brand, session, params, body }) => acceptTerms(ctx, owner(brand, session), params.id, body.version),
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
          ),
        },
        detail: doc(TAG, "Accept the master's current terms (reward policy) for a subscription", {
          description:
            "A subscription pays on the terms its follower accepted (`terms`); a master's change of its reward policy applies to new subscriptions, and to this one only once accepted here (`terms_pending` says there is something to accept). `version` must be the master's current policy version (GET /copytrade/masters/{id}: `policy_version`), else 409 TERMS_CHANGED: the terms changed again since they were read. The new fee schedule starts now; a subscription-fee period already paid runs to its end.",
        }),
      },
    )
    .post(
      '/copytrade/subscription/:id/:action',
      async ({ brand, session, params, body }) => {
        const o = owner(brand, session)
        const s = await ownSubscription(ctx, o, params.id)
        await transition(ctx, s, params.action, body.reason || `${params.action} by the customer`)
        return subscriptionDetail(ctx, o, s.id)
      },
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
          200: Subscription,
          ...err('SUBSCRIPTION_NOT_FOUND', 'PERMISSION_DENIED', 'INVALID_TRANSITION'),
        },
        detail: doc(TAG, 'Pause, resume or disable a subscription', {
          optionalBody: true,
          description:
            'Status table (spec 3.5, designed here): ACTIVE -pause-> PAUSED -resume-> ACTIVE; ACTIVE or PAUSED ' +
            '-disable-> DISABLED (final; its copies are closed). PAUSED copies nothing new but still copies the ' +
            'closes of positions already copied. Resume copies the master positions opened meanwhile. Any other ' +
            'move: 409 INVALID_TRANSITION.',
        }),
      },
    )
    .delete(
      '/copytrade/subscription/:id',
      async ({ brand, session, params }) => {
        const s = await ownSubscription(ctx, owner(brand, session), params.id)
        if (s.status !== 2) await transition(ctx, s, 'disable', 'deleted by the customer')
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
        subscriptionRecords(ctx, owner(brand, session), params.id, query),
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
            'One row per action (open, close, partial_close, modify): copied, with the fill times and prices and ' +
            'the slippage, or skipped with a stable reason (README: skip reasons).',
        }),
      },
    )
    .get(
      '/copytrade/subscription/:id/rewards',
      ({ brand, session, params }) => subscriptionRewards(ctx, owner(brand, session), params.id),
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
            'Copy equity = capital (start balance + deposits - withdrawals) + realized result of copies - rewards ' +
            'paid + floating result of open copies. performance_fee_now is what PERFORMANCE_FEE_HWM would ' +
            'charge if the period ended now; management_fee_per_day what MANAGEMENT_FEE accrues per day.',
        }),
      },
    )

/** Staff routes: list and disable masters and subscriptions. */
export const copyStaffRoutes = (ctx: CopyCtx) =>
  new Elysia({ name: 'copytrade-staff', seed: ctx.instanceId })
    .use(security(ctx))
    .get('/manager/copytrade/masters', ({ brand, query }) => staffMasters(ctx, brand.id, query), {
      auth: STAFF,
      ...textInput({
        query: {
          enabled: t.Optional(Int({ minimum: 0, maximum: 1, description: '1 enabled, 0 disabled' })),
          customer_id: t.Optional(Id('customer id')),
          before: t.Optional(Int({ minimum: 1, description: 'next_before of the page before' })),
          limit: t.Optional(Int({ minimum: 1, maximum: 500, description: 'rows per page (default 100)' })),
        },
      }),
      response: { 200: t.Object({ rows: t.Array(Master), next_before: Int() }) },
      detail: doc(STAFF_TAG, 'Masters of the brand'),
    })
    .post(
      '/manager/copytrade/masters/:id/disable',
      ({ brand, session, params, body }) =>
        staffDisableMaster(ctx, brand.id, session.staffId!, params.id, body),
      {
        auth: STAFF,
        // the example disables the master the create example made, not the demo's marketplace master
        ...textInput({ params: IdParam('master', 2) }),
        body: t.Object(
          {
            reason: t.String({ maxLength: 200, description: 'shown to the owner as blocked_reason' }),
            end_subscriptions: t.Optional(
              t.Boolean({ description: 'also disable its subscriptions (their copies close)' }),
            ),
          },
          { example: { reason: 'under review', end_subscriptions: false } },
        ),
        response: { 200: Master, ...err('MASTER_NOT_FOUND') },
        detail: doc(STAFF_TAG, 'Disable a master', {
          description:
            'It copies nothing new and its owner cannot enable it; closes of copied positions still copy.',
        }),
      },
    )
    .get('/manager/copytrade/subscriptions', ({ brand, query }) => staffSubscriptions(ctx, brand.id, query), {
      auth: STAFF,
      ...textInput({
        query: {
          master_id: t.Optional(Id('master id')),
          follower_login: t.Optional(Login),
          status: t.Optional(Int({ minimum: 0, maximum: 2, description: '0 ACTIVE, 1 PAUSED, 2 DISABLED' })),
          before: t.Optional(Int({ minimum: 1, description: 'next_before of the page before' })),
          limit: t.Optional(Int({ minimum: 1, maximum: 500, description: 'rows per page (default 100)' })),
        },
      }),
      response: { 200: t.Object({ rows: t.Array(StaffSubscription), next_before: Int() }) },
      detail: doc(STAFF_TAG, 'Subscriptions of the brand'),
    })
    .post(
      '/manager/copytrade/subscriptions/:id/disable',
      async ({ brand, session, params, body }) => {
        await staffDisableSubscription(ctx, brand.id, session.staffId!, params.id, body.reason)
        return { data: 'OK' as const }
      },
      {
        auth: STAFF,
        ...textInput({ params: IdParam('subscription') }),
        body: t.Object(
          { reason: t.String({ maxLength: 200, description: 'kept as the status reason' }) },
          { example: { reason: 'customer request' } },
        ),
        response: { 200: Ok, ...err('SUBSCRIPTION_NOT_FOUND', 'INVALID_TRANSITION') },
        detail: doc(STAFF_TAG, 'Disable a subscription (its copies are closed)'),
      },
    )
