import { Elysia, t } from 'elysia'
import { doc } from '../../kernel/http/openapi'
import { Id, Int, Ok, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import type { CopyCtx } from './context'
import { ANY, CUSTOMER, err, IdParam, owner, TAG } from './route-common'
import {
  Master,
  MasterCreateBody,
  MasterFollowers,
  MasterTrades,
  MasterUpdateBody,
  PublicMaster,
} from './route-schemas'
import {
  FOLLOWERS_PAGE,
  marketMaster,
  marketplace,
  masterFollowers,
  masterTrades,
  SORT_KEYS,
} from './service/marketplace'
import { createMaster, deleteMaster, myMasters, updateMaster } from './service/masters'
import { masterView } from './views'

/** The marketplace and a customer's master profiles (spec 4.12). */
export const masterRoutes = (ctx: CopyCtx) =>
  new Elysia({ name: 'copytrade-master-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .get('/copytrade/masters', ({ brand, query }) => marketplace({ ctx, brandId: brand.id, input: query }), {
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
      ({ brand, session, params }) =>
        marketMaster({ ctx, brandId: brand.id, customerId: session.customerId, id: params.id }),
      {
        auth: ANY,
        ...textInput({ params: IdParam('master') }),
        response: { 200: PublicMaster, ...err('MASTER_NOT_FOUND', 'MASTER_NOT_AVAILABLE') },
        detail: doc(TAG, 'One master of the marketplace'),
      },
    )
    .get(
      '/copytrade/master/trades',
      ({ brand, session, query }) =>
        masterTrades({ ctx, brandId: brand.id, customerId: session.customerId, input: query }),
      {
        auth: ANY,
        ...textInput({
          query: {
            master_id: Id('master id'),
            limit: t.Optional(Int({ minimum: 1, maximum: 500, description: 'rows per page (default 50)' })),
            before: t.Optional(Int({ minimum: 1, description: 'next_before of the page before' })),
          },
        }),
        response: {
          200: MasterTrades,
          ...err('MASTER_NOT_FOUND', 'MASTER_NOT_AVAILABLE', 'TRADE_HISTORY_NOT_PUBLIC'),
        },
        detail: doc(TAG, "A master's public trade history", {
          description:
            'Any authenticated session (terminal, CRM, staff). Closed trades newest first, when the master has ' +
            'show_trade_history = 1 (its owner always sees them), else 403 TRADE_HISTORY_NOT_PUBLIC; a disabled or private master is 403 MASTER_NOT_AVAILABLE to all but its owner.',
        }),
      },
    )
    .get(
      '/copytrade/master/followers',
      ({ brand, session, query }) =>
        masterFollowers({ ctx, brandId: brand.id, customerId: session.customerId, input: query }),
      {
        auth: ANY,
        ...textInput({
          query: {
            master_id: Id('master id'),
            limit: t.Optional(
              Int({
                minimum: 1,
                maximum: FOLLOWERS_PAGE.max,
                description: `rows per page (default ${FOLLOWERS_PAGE.default}, at most ${FOLLOWERS_PAGE.max})`,
              }),
            ),
            after: t.Optional(Int({ minimum: 1, description: 'next_after of the page before' })),
          },
        }),
        response: {
          200: MasterFollowers,
          ...err('MASTER_NOT_FOUND', 'MASTER_NOT_AVAILABLE', 'FOLLOWERS_NOT_PUBLIC'),
        },
        detail: doc(TAG, "A master's public follower statistics", {
          description:
            'Any authenticated session. Counts and per-subscription figures without logins, when the master ' +
            'has show_followers = 1 (its owner always sees them), else 403 FOLLOWERS_NOT_PUBLIC; a disabled or private master is 403 MASTER_NOT_AVAILABLE to all but its owner. ' +
            `Rows oldest first, ${FOLLOWERS_PAGE.default} a page by default (\`limit\` up to ${FOLLOWERS_PAGE.max}): pass \`next_after\` as \`after\` ` +
            'for the next page (0 on the last); `n` counts on across pages and the counts are of all live followers, as of each page (a follower who joins or leaves between pages moves them). A limit out of range is 400 INVALID_DATA naming limit.',
        }),
      },
    )
    .post(
      '/copytrade/master',
      async ({ brand, session, body }) =>
        masterView(await createMaster({ ctx, owner: owner(brand, session), input: body })),
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
            'enabled REAL account of the customer whose funds are its own (400 INVALID_PAYOUT_ACCOUNT). Neither may be an ' +
            "account whose funds are managed (a prop challenge's, the firm's capital): as the login 403 INVALID_ACCOUNT, " +
            'as payout_login 400 INVALID_PAYOUT_ACCOUNT. One profile per login (409 MASTER_EXISTS).',
        }),
      },
    )
    .get(
      '/copytrade/master/mine',
      async ({ brand, session }) => ({
        rows: (await myMasters({ ctx, owner: owner(brand, session) })).map(masterView),
      }),
      {
        auth: CUSTOMER,
        response: { 200: t.Object({ rows: t.Array(Master) }), ...err('INVALID_CUSTOMER_SESSION') },
        detail: doc(TAG, "The customer's masters"),
      },
    )
    .put(
      '/copytrade/master/:id',
      async ({ brand, session, params, body }) =>
        masterView(await updateMaster({ ctx, owner: owner(brand, session), id: params.id, input: body })),
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
            'INVALID_TRANSITION',
          ),
        },
        detail: doc(TAG, 'Update a master', {
          description:
            'Only the owner (403 PERMISSION_DENIED). A new reward policy applies to what accrues from now on. ' +
            "payout_login: an enabled REAL account of the customer whose funds are its own (not a prop account's), else 400 INVALID_PAYOUT_ACCOUNT. " +
            'Another change of its terms committed since this request read them: 409 INVALID_TRANSITION (read it again).',
        }),
      },
    )
    .delete(
      '/copytrade/master/:id',
      async ({ brand, session, params }) => {
        await deleteMaster({ ctx, owner: owner(brand, session), id: params.id })
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
