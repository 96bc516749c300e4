import type { TProperties } from '@sinclair/typebox'
import { Elysia, t } from 'elysia'
import type { Brand } from '../../../kernel/brand/registry'
import { ApiError } from '../../../kernel/http/errors'
import { doc, errors } from '../../../kernel/http/openapi'
import { Id, Int, nameModels, textInput } from '../../../kernel/http/schemas'
import { security } from '../../../kernel/http/security'
import {
  type AffiliatePrincipal,
  type AffiliateTokens,
  SCOPES,
  type Scope,
  TOKEN_REFUSALS,
} from '../cabinet/tokens'
import type { AffiliateCtx } from '../context'
import { PAGE_DEFAULT, PAGE_MAX } from '../domain/cursor'
import { CommissionKind, CommissionRowModel } from '../report-models'
import { PARTNER_SITE } from '../site'
import { rateLimit } from './rate-limit'
import { type PageQuery, referredCommissions, referredCustomers, referredTransactions } from './records'
import { issueToken, listTokens, revokeToken } from './tokens-admin'

const TAG = 'Affiliate integration API'
const STAFF_TAG = 'Affiliates back office'
const STAFF = { roles: ['SESSION_MANAGER', 'SESSION_ADMIN'] as const }

/** The token of a request, sent bare in Authorization (spec 5.5: no Bearer scheme, no cookie). */
function bareToken(request: Request) {
  const h = request.headers.get('authorization')
  if (h?.startsWith('Bearer ') || h?.startsWith('bearer '))
    throw new ApiError(
      401,
      'UNAUTHORIZED',
      'send the token bare in Authorization, without a scheme (spec 5.5)',
    )
  return h
}

const Paging = {
  cursor: t.Optional(
    t.String({ maxLength: 64, description: 'next_cursor of the previous page; none for the first' }),
  ),
  page_size: t.Optional(
    Int({
      minimum: 1,
      maximum: PAGE_MAX,
      description: `rows per page, default ${PAGE_DEFAULT}, at most ${PAGE_MAX} (more: 400)`,
      example: 100,
    }),
  ),
  from: t.Optional(t.String({ description: 'first day (UTC), YYYY-MM-DD', example: '2026-11-01' })),
  to: t.Optional(t.String({ description: 'last day (UTC), YYYY-MM-DD, included', example: '2026-11-30' })),
}
const PageOf = (row: ReturnType<typeof t.Object>) =>
  t.Object({
    rows: t.Array(row),
    has_more: t.Boolean({ description: 'true: ask again with next_cursor' }),
    next_cursor: t.Union([t.String(), t.Null()], { description: 'opaque: the position after the last row' }),
  })
const Token = t.Object({
  id: t.String({ description: 'token id (the JWT carries it)' }),
  prefix: t.String({ description: 'shown to tell tokens apart' }),
  affiliate_id: Int(),
  brand_id: Int(),
  scopes: t.Array(t.String()),
  created_time: Int({ description: 'epoch seconds' }),
  expires_time: Int({ description: 'epoch seconds' }),
  last_used_time: Int({ description: 'epoch seconds, to the minute; 0: never' }),
  revoked_time: Int({ description: 'epoch seconds; 0: not revoked' }),
  status: t.String({ description: 'active | expired | revoked' }),
})
const RATE_HEADERS =
  'Every answer carries X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (epoch seconds); past the ' +
  'limit (AFFILIATE_API_RATE_PER_MINUTE per token, 600 by default, counted across instances) 429 RATE_LIMITED with Retry-After.'

export const integrationRoutes = (ctx: AffiliateCtx, tokens: AffiliateTokens) => {
  /** the requests of the integration routes whose query waits for the token (`countedQuery`) */
  const awaiting = new WeakMap<Request, { headers: Record<string, unknown>; read: () => void }>()
  const guard = (scope: Scope) => ({
    site: PARTNER_SITE.name,
    access: `an integration token with the scope \`${scope}\`, bare in Authorization (no Bearer), on the brand's affiliate_host.`,
    security: [{ AffiliateToken: [] }],
    refusals: TOKEN_REFUSALS,
    verify: async (request: Request, brand: Brand) => {
      const p = (await tokens.verify('api', bareToken(request), brand, scope)) as AffiliatePrincipal
      const waiting = awaiting.get(request)
      awaiting.delete(request)
      const headers = await rateLimit(ctx, p.tokenId)
      if (waiting) {
        Object.assign(waiting.headers, headers)
        waiting.read()
      }
      return p
    },
  })
  /**
   * The query of an integration route. Its transform runs before the guard's (Elysia runs a route's own
   * first) and leaves the request's context for it: once the token is verified, the request is counted, its
   * X-RateLimit-* headers set, and only then the query read (a repeated parameter refused) and validated.
   * So a 400 for a bad parameter (page_size past its maximum, not a number) carries them and counts, as
   * every answer does; a request without a valid token is refused (401) before anything is counted.
   */
  const countedQuery = <Q extends TProperties>(query: Q) => {
    const input = textInput({ query })
    return {
      ...input,
      transform(c: Parameters<typeof input.transform>[0] & { set: { headers: Record<string, unknown> } }) {
        awaiting.set(c.request, { headers: c.set.headers, read: () => input.transform(c) })
      },
    }
  }
  return new Elysia({ name: 'affiliate-integration', seed: ctx.instanceId })
    .use(security(ctx))
    .get(
      '/api/affiliate/v1/customers',
      ({ principal, query }) => referredCustomers(ctx, principal as AffiliatePrincipal, query as PageQuery),
      {
        site: guard('customers:read'),
        ...countedQuery(Paging),
        response: {
          200: PageOf(
            t.Object(
              {
                customer_id: Int(),
                registered_time: Int({ description: 'epoch seconds' }),
                country: t.String({ description: 'ISO 3166-1 alpha-2, or empty' }),
                link_id: t.Union([Int(), t.Null()]),
                link_code: t.String(),
                campaign: t.String(),
                utm_source: t.String(),
                utm_medium: t.String(),
                utm_campaign: t.String(),
                sub1: t.String(),
                sub2: t.String(),
                sub3: t.String(),
                sub4: t.String(),
                sub5: t.String(),
                click_id: t.String(),
                kyc_approved_time: t.Union([Int(), t.Null()]),
                first_deposit_time: t.Union([Int(), t.Null()]),
                first_deposit_amount: t.Union([t.Number(), t.Null()]),
                first_deposit_currency: t.String(),
                active_trader_time: t.Union([Int(), t.Null()]),
              },
              { title: 'ReferredCustomer' },
            ),
          ),
          ...errors({ 429: ['RATE_LIMITED'] }),
        },
        detail: doc(TAG, 'Customers the affiliate referred on this brand, newest registration first', {
          description:
            "The affiliate and brand are the token's: no parameter selects others. No personal data: id, country, the " +
            `attribution values it came with and its funnel milestones. from/to filter the registration day. ${RATE_HEADERS}`,
        }),
      },
    )
    .get(
      '/api/affiliate/v1/transactions',
      ({ principal, query }) =>
        referredTransactions(
          ctx,
          principal as AffiliatePrincipal,
          query as Parameters<typeof referredTransactions>[2],
        ),
      {
        site: guard('transactions:read'),
        ...countedQuery({
          ...Paging,
          type: t.Optional(
            t.UnionEnum(['deposit', 'reversal'], {
              default: undefined,
              description: 'deposit, or refund/chargeback',
            }),
          ),
          customer_id: t.Optional(Id('one referred customer')),
        }),
        response: {
          200: PageOf(
            t.Object(
              {
                id: Int({ description: 'row id (with time, the cursor position)' }),
                transaction_id: t.String({ description: 'the cashier transaction' }),
                customer_id: Int(),
                type: t.String({
                  description: 'deposit | reversal (a refund or chargeback of a deposit: negative)',
                }),
                amount: t.Union([t.Number(), t.Null()]),
                currency: t.String(),
                time: Int({ description: 'epoch seconds' }),
              },
              { title: 'ReferredTransaction' },
            ),
          ),
          ...errors({ 429: ['RATE_LIMITED'] }),
        },
        detail: doc(
          TAG,
          "Financial transactions of the affiliate's referred customers on this brand, newest first",
          {
            description: `Credited deposits and their refunds or chargebacks. ${RATE_HEADERS}`,
          },
        ),
      },
    )
    .get(
      '/api/affiliate/v1/commissions',
      ({ principal, query }) =>
        referredCommissions(
          ctx,
          principal as AffiliatePrincipal,
          query as Parameters<typeof referredCommissions>[2],
        ),
      {
        site: guard('commissions:read'),
        ...countedQuery({
          ...Paging,
          period: t.Optional(
            t.String({
              pattern: '^\\d{4}-(0[1-9]|1[0-2])$',
              description:
                "a period's rows (YYYY-MM), whatever their event time; from/to are then not applied",
              example: '2026-10',
            }),
          ),
          kind: t.Optional(CommissionKind),
        }),
        response: {
          200: PageOf(CommissionRowModel),
          ...errors({ 429: ['RATE_LIMITED'] }),
        },
        detail: doc(TAG, "The affiliate's commission rows on this brand, newest first", {
          description:
            'Each row is what one thing earned (a CPA, the RevShare of a trade, deposit or bonus, a reversal within the hold, a tier adjustment, a sub-affiliate override), in the currency, with the rate, the plan version and the conversion facts it derives from; `period` is the statement it belongs to. ' +
            RATE_HEADERS,
        }),
      },
    )
    .post(
      '/manager/affiliates/:id/tokens',
      ({ brand, session, params, body }) =>
        issueToken(ctx, tokens, brand.id, session.staffId!, params.id, body),
      {
        auth: STAFF,
        ...textInput({ params: { id: Id('affiliate id') } }),
        body: t.Object(
          {
            scopes: t.Array(t.UnionEnum([...SCOPES], { default: undefined }), {
              minItems: 1,
              maxItems: SCOPES.length,
              description: SCOPES.join(', '),
            }),
            expires_in_days: Int({ minimum: 1, maximum: 365, description: 'lifetime in days (1..365)' }),
          },
          {
            example: {
              scopes: ['customers:read', 'transactions:read', 'commissions:read'],
              expires_in_days: 90,
            },
          },
        ),
        response: {
          200: t.Object(
            {
              ...Token.properties,
              token: t.String({ description: 'the JWT: shown once, never again' }),
            },
            { title: 'IntegrationTokenIssued' },
          ),
          ...errors({ 404: ['AFFILIATE_NOT_FOUND'], 409: ['BRAND_ACCESS_REVOKED'] }),
        },
        detail: doc(STAFF_TAG, 'Issue an integration token for an affiliate on this brand (shown once)'),
      },
    )
    .get('/manager/affiliates/:id/tokens', ({ brand, params }) => listTokens(ctx, brand.id, params.id), {
      auth: STAFF,
      ...textInput({ params: { id: Id('affiliate id') } }),
      response: { 200: t.Object({ rows: t.Array(Token) }), ...errors({ 404: ['AFFILIATE_NOT_FOUND'] }) },
      detail: doc(STAFF_TAG, "An affiliate's integration tokens on this brand (metadata only)"),
    })
    .post(
      '/manager/affiliate-tokens/:token_id/revoke',
      ({ brand, params }) => revokeToken(ctx, tokens, brand.id, params.token_id),
      {
        auth: STAFF,
        params: t.Object({
          token_id: t.String({ maxLength: 40, description: 'token id', example: 'tok_Zm9vYmFyYmF6cXV4' }),
        }),
        response: { 200: Token, ...errors({ 404: ['TOKEN_NOT_FOUND'] }) },
        detail: doc(
          STAFF_TAG,
          'Revoke an integration token (refused from the next request, on every instance)',
          {
            optionalBody: true,
          },
        ),
      },
    )
}

nameModels({ IntegrationToken: Token })
