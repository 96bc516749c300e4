import { Elysia, t } from 'elysia'
import type { Brand } from '../../../kernel/brand/registry'
import { ApiError } from '../../../kernel/http/errors'
import { clientIp } from '../../../kernel/http/http'
import { doc, errors } from '../../../kernel/http/openapi'
import { Id, Int, PasswordToCheck, textInput } from '../../../kernel/http/schemas'
import { publicHost, security } from '../../../kernel/http/security'
import { csvAnswer } from '../csv'
import { CONVERSION_KINDS, type ConversionKind } from '../domain/conversions'
import { periodOf, RANGES } from '../domain/range'
import {
  COMMISSIONS_CSV,
  CommissionKind,
  CommissionRowModel,
  Dimension,
  EarningsModel,
  REPORT_CSV,
  ReportModel,
  StatementModel,
} from '../report-models'
import { Conversion } from '../routes'
import type { CommissionRowKind, ReportDimension } from '../service/reports'
import { PARTNER_SITE } from '../site'
import {
  cabinetCommissions,
  cabinetCommissionsCsv,
  cabinetEarnings,
  cabinetReport,
  cabinetStatement,
  cabinetStatementCsv,
  cabinetStatements,
  reportCsvName,
  reportTable,
} from './earnings'
import { clicksPage, conversionsPage, dashboard, type FunnelCtx, myLinks } from './funnel'
import { CABINET_COOKIE, cabinetLogin, principalMe } from './session'
import { cabinetShell, serveAsset } from './shell'
import { type AffiliatePrincipal, type AffiliateTokens, TOKEN_REFUSALS } from './tokens'

const TAG = 'Affiliate cabinet'

const cookieOf = (header: string | null) => {
  const m = header ? new RegExp(`(?:^|;\\s*)${CABINET_COOKIE}=([^;]+)`).exec(header) : null
  return m ? m[1] : null
}

/**
 * CSRF (spec 4.17's cookie session): a cabinet POST must come from a page of this very host. Browsers
 * send Origin on every cross-site POST and on same-origin fetch POSTs; a request without it (a script,
 * not a browser riding on the cookie) must then carry the token in Authorization instead of the cookie.
 */
function assertSameOrigin(ctx: FunnelCtx, request: Request, usesCookie: boolean) {
  const origin = request.headers.get('origin')
  // behind a trusted proxy the page's host is the forwarded one, as for the brand
  const host = publicHost(ctx, request.headers)
  if (origin === null) {
    if (usesCookie)
      throw new ApiError(403, 'CSRF_REJECTED', 'a cabinet POST from a browser must carry its Origin')
    return
  }
  let originHost = ''
  try {
    originHost = new URL(origin).host
  } catch {}
  if (originHost !== host) throw new ApiError(403, 'CSRF_REJECTED', 'the request comes from another site')
}

export const cabinetRoutes = (ctx: FunnelCtx, tokens: AffiliateTokens) => {
  const secure = ctx.config.production
  const session = (token: string, maxAge: number) =>
    `${CABINET_COOKIE}=${token}; Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`
  const tokenOf = (request: Request) => {
    const bare = request.headers.get('authorization')
    return {
      token: bare && !bare.includes(' ') ? bare : cookieOf(request.headers.get('cookie')),
      cookie: !bare,
    }
  }
  const signedIn = {
    site: PARTNER_SITE.name,
    access:
      "an affiliate cabinet session (cookie `tcs_aff` from POST /api/affiliate/login, or the token bare in Authorization), on the brand's affiliate_host only.",
    security: [{ AffiliateSession: [] }],
    refusals: TOKEN_REFUSALS,
    verify: (request: Request, brand: Brand) => tokens.verify('cabinet', tokenOf(request).token, brand),
  }
  const open = { site: PARTNER_SITE.name, access: "public, on the brand's affiliate_host only." }
  const who = (p: unknown) => p as AffiliatePrincipal
  const period = (q: { range?: string; from?: string; to?: string }) => {
    const p = periodOf(q, ctx.clock.now())
    if (typeof p === 'string') throw new ApiError(400, 'INVALID_DATA', p)
    return p
  }
  const RangeQuery = {
    range: t.Optional(
      t.String({
        description: `period: ${RANGES.join(', ')} (default 30d, custom when from or to is sent; UTC days; custom takes from and to, which any other range refuses: 400 INVALID_DATA)`,
        // the from/to examples go with it: any other range refuses them
        example: 'custom',
      }),
    ),
    from: t.Optional(
      t.String({
        description: 'range=custom only (with another range: 400 INVALID_DATA): first day, YYYY-MM-DD',
        example: '2026-11-01',
      }),
    ),
    to: t.Optional(
      t.String({
        description:
          'range=custom only (with another range: 400 INVALID_DATA): last day, YYYY-MM-DD (at most 366 days)',
        example: '2026-11-24',
      }),
    ),
  }
  const Paging = {
    cursor: t.Optional(t.String({ maxLength: 64, description: 'next_cursor of the previous page' })),
    limit: t.Optional(Int({ minimum: 1, maximum: 200, description: 'rows per page (default 50)' })),
  }
  const PageOf = (row: ReturnType<typeof t.Object>) =>
    t.Object({ rows: t.Array(row), has_more: t.Boolean(), next_cursor: t.Union([t.String(), t.Null()]) })
  const Format = {
    format: t.Optional(
      t.UnionEnum(['json', 'csv'], {
        default: undefined,
        description:
          'csv: the whole table as a text/csv download (a header row; Content-Disposition attachment)',
      }),
    ),
  }
  const Period = {
    period: t.Optional(
      t.String({
        pattern: '^\\d{4}-(0[1-9]|1[0-2])$',
        description: "YYYY-MM: that period's rows, whatever their event time (the range is not applied)",
        example: '2026-11',
      }),
    ),
  }
  const Me = t.Object(
    {
      id: Int(),
      email: t.String({ description: "empty on a brand other than the affiliate's home brand (its field)" }),
      code: t.String(),
      name: t.String(),
      brand: t.Object({ id: Int(), name: t.String() }, { title: 'AffiliateBrand' }),
    },
    { title: 'AffiliateProfile' },
  )

  const page = (path: string) => ({
    site: open,
    response: errors(),
    detail: doc(TAG, `Cabinet page ${path}`, { media: ['text/html'] }),
  })
  return (
    new Elysia({ name: 'affiliate-cabinet', seed: ctx.instanceId })
      .use(security(ctx))
      .post(
        '/api/affiliate/login',
        async ({ brand, body, request, server, set }) => {
          assertSameOrigin(ctx, request, false)
          const r = await cabinetLogin(ctx, tokens, brand, body, clientIp(ctx, request, server))
          set.headers['set-cookie'] = session(r.token, ctx.config.jwt.ttlSeconds)
          return { me: r.me, expires_time: Math.floor(r.expiresAt / 1000) }
        },
        {
          site: open,
          body: t.Object(
            {
              login: t.String({ minLength: 1, maxLength: 254, description: 'the affiliate email or code' }),
              password: PasswordToCheck('its cabinet password on this brand'),
            },
            { example: { login: 'partner@example.com', password: 'partner-pass-1' } },
          ),
          response: {
            200: t.Object({ me: Me, expires_time: Int({ description: 'epoch seconds' }) }),
            ...errors({ 401: ['INVALID_CREDENTIALS'], 403: ['CSRF_REJECTED'], 429: ['TOO_MANY_ATTEMPTS'] }),
          },
          detail: doc(TAG, 'Sign in to the affiliate cabinet', {
            description:
              'Sets the session cookie `tcs_aff` (HttpOnly, SameSite=Strict, Secure in production). Wrong credentials, ' +
              'a suspended affiliate and one without access to this brand answer the same 401; failures lock the login ' +
              'like every sign-in (429). A browser POST must come from this host (Origin).',
          }),
        },
      )
      .post(
        '/api/affiliate/logout',
        async ({ brand, principal, request, set }) => {
          assertSameOrigin(ctx, request, tokenOf(request).cookie)
          await tokens.revoke(who(principal).tokenId, { kind: 'cabinet', brandId: brand.id })
          set.headers['set-cookie'] = session('', 0)
          return { data: 'OK' as const }
        },
        {
          site: signedIn,
          response: { 200: t.Object({ data: t.Literal('OK') }), ...errors({ 403: ['CSRF_REJECTED'] }) },
          detail: doc(TAG, 'Sign out (the session ends on every instance)', { optionalBody: true }),
        },
      )
      .post(
        '/api/affiliate/logout/all',
        async ({ brand, principal, request, set }) => {
          assertSameOrigin(ctx, request, tokenOf(request).cookie)
          const ended = await tokens.revokeAll({
            kind: 'cabinet',
            brandId: brand.id,
            affiliateId: who(principal).affiliate.id,
          })
          set.headers['set-cookie'] = session('', 0)
          return { data: 'OK' as const, ended }
        },
        {
          site: signedIn,
          response: {
            200: t.Object({
              data: t.Literal('OK'),
              ended: Int({ description: 'cabinet sessions ended, this one included' }),
            }),
            ...errors({ 403: ['CSRF_REJECTED'] }),
          },
          detail: doc(TAG, 'Sign out everywhere (every cabinet session of the affiliate on this brand)', {
            optionalBody: true,
            description:
              "Ends every cabinet session the affiliate holds on this brand, on every instance, from the next request on (a lost laptop, a shared computer): each answers 401 TOKEN_REVOKED. The integration's API tokens are not touched (revoke them one by one). Clears this session's cookie.",
          }),
        },
      )
      .get('/api/affiliate/me', ({ brand, principal }) => principalMe(who(principal), brand), {
        site: signedIn,
        response: { 200: Me, ...errors() },
        detail: doc(TAG, 'The signed-in affiliate'),
      })
      .get(
        '/api/affiliate/dashboard',
        ({ principal, query }) => dashboard(ctx, who(principal), period(query)),
        {
          site: signedIn,
          ...textInput({ query: RangeQuery }),
          response: {
            200: t.Object(
              {
                range: t.String(),
                from: t.String({ description: 'first day (UTC)' }),
                to: t.String({ description: 'last day (UTC)' }),
                funnel: t.Object(
                  {
                    clicks: Int({ description: 'visits with its code or links (bots left out), raw' }),
                    unique_clicks: Int({
                      description:
                        'of those, the first of a visitor on a link within the hour, none from an address that clicks like a script',
                    }),
                    registrations: Int(),
                    kyc_approvals: Int(),
                    first_deposits: Int(),
                    active_traders: Int(),
                    deposits: Int({ description: 'Deposit rows (one per cashier transaction)' }),
                    reversals: Int({ description: 'refunds and chargebacks' }),
                  },
                  { title: 'AffiliateFunnel' },
                ),
                deposit_volume: t.Array(
                  t.Object(
                    {
                      currency: t.String(),
                      deposits: t.Number(),
                      reversals: t.Number(),
                      net: t.Number(),
                    },
                    { title: 'DepositVolume' },
                  ),
                ),
                rates: t.Object(
                  {
                    registration: t.Number({ description: 'registrations / unique clicks' }),
                    kyc_approval: t.Number({ description: 'KYC approvals / registrations' }),
                    first_deposit: t.Number({ description: 'first deposits / registrations' }),
                    active_trader: t.Number({ description: 'active traders / registrations' }),
                  },
                  {
                    title: 'AffiliateRates',
                    description:
                      'ratios 0..1 (more than 1 when a period holds later steps of earlier registrations)',
                  },
                ),
                series: t.Object(
                  { days: t.Array(t.String()) },
                  {
                    title: 'AffiliateSeries',
                    additionalProperties: t.Array(Int()),
                    description: 'per day: clicks and each conversion kind',
                  },
                ),
              },
              { title: 'AffiliateDashboard' },
            ),
            ...errors(),
          },
          detail: doc(TAG, "The affiliate's funnel on this brand for a period", {
            description:
              'Each number counts the rows GET /api/affiliate/conversions (kind=…) and GET /api/affiliate/clicks list for the same range. ' +
              'Ranges: today, 7d, 30d, 90d (including today), mtd, ytd, custom with from and to; others answer 400 INVALID_DATA.',
          }),
        },
      )
      .get(
        '/api/affiliate/links',
        async ({ principal, request }) => linksWithUrls(ctx, who(principal), request),
        {
          site: signedIn,
          response: {
            200: t.Object({
              rows: t.Array(
                t.Object(
                  {
                    id: Int(),
                    code: t.String(),
                    landing_path: t.String(),
                    campaign: t.String(),
                    active: t.Boolean(),
                    path: t.String(),
                    url: t.String({ description: 'the link to share, on the brand host' }),
                  },
                  { title: 'AffiliateSharedLink' },
                ),
              ),
            }),
            ...errors(),
          },
          detail: doc(TAG, "The affiliate's tracking links on this brand"),
        },
      )
      .get(
        '/api/affiliate/conversions',
        ({ principal, query }) =>
          conversionsPage(ctx, who(principal), period(query), {
            kind: query.kind as ConversionKind | undefined,
            cursor: query.cursor,
            limit: query.limit,
          }),
        {
          site: signedIn,
          ...textInput({
            query: {
              ...RangeQuery,
              kind: t.Optional(
                t.UnionEnum([...CONVERSION_KINDS], { default: undefined, description: 'one kind only' }),
              ),
              ...Paging,
            },
          }),
          response: {
            200: PageOf(
              t.Object(
                {
                  ...Conversion.properties,
                  link_code: t.String(),
                  tracking: t.Record(t.String(), t.String(), {
                    description:
                      "what the affiliate's tracker set on the touch that won the customer: click_id, sub1..sub5, utm_*, campaign",
                  }),
                },
                { title: 'AffiliateCabinetConversion' },
              ),
            ),
            ...errors(),
          },
          detail: doc(TAG, "The affiliate's conversions in a period, newest first"),
        },
      )
      .get(
        '/api/affiliate/clicks',
        ({ principal, query }) => clicksPage(ctx, who(principal), period(query), query),
        {
          site: signedIn,
          ...textInput({ query: { ...RangeQuery, ...Paging } }),
          response: {
            200: PageOf(
              t.Object(
                {
                  id: Int(),
                  time: Int({ description: 'epoch seconds' }),
                  source: t.String({ description: 'page | click | install | registration' }),
                  link_code: t.String(),
                  landing_path: t.String(),
                  country: t.String({
                    description: "the visitor's country (ISO 3166-1 alpha-2); '' when unknown",
                  }),
                  values: t.Record(t.String(), t.String(), {
                    description: 'the values it carried: campaign, utm_*, sub1..sub5, click_id',
                  }),
                  unique: t.Boolean({ description: 'counted in unique_clicks' }),
                  suspect: t.Boolean({
                    description: 'its address clicked like a script (a burst, rotating agents)',
                  }),
                },
                { title: 'AffiliateClick' },
              ),
            ),
            ...errors(),
          },
          detail: doc(TAG, "The affiliate's clicks in a period, newest first (the funnel's first number)"),
        },
      )
      .get(
        '/api/affiliate/reports',
        async ({ principal, query, set }) => {
          const r = await cabinetReport(
            ctx,
            who(principal),
            period(query),
            query.dimension as ReportDimension,
          )
          return query.format === 'csv' ? csvAnswer(set, reportCsvName(r), reportTable(r)) : r
        },
        {
          site: signedIn,
          ...textInput({ query: { ...RangeQuery, dimension: Dimension, ...Format } }),
          response: { 200: t.Union([ReportModel, REPORT_CSV]), ...errors() },
          detail: doc(TAG, "The affiliate's report by day, link, sub-id, country or landing page", {
            csv: true,
            description:
              'Per group: clicks (raw and unique), registrations, first deposits, deposit volume and commissions per currency, and the totals. ' +
              'Each number sums the rows GET /api/affiliate/clicks, /conversions and /commissions list for the same range. format=csv downloads the table ' +
              '(`text/csv`: a header row, one column per currency amount such as `deposit_volume_USD`, a last row `total`).',
          }),
        },
      )
      .get(
        '/api/affiliate/earnings',
        ({ principal, query }) => cabinetEarnings(ctx, who(principal), period(query)),
        {
          site: signedIn,
          ...textInput({ query: RangeQuery }),
          response: { 200: EarningsModel, ...errors() },
          detail: doc(
            TAG,
            "The affiliate's commissions in a period, and the current period's running total",
            {
              description:
                'Commission rows of the range (by event time) per kind and currency; each figure counts the rows GET /api/affiliate/commissions ' +
                '(kind=…) lists for the same range. current_period: the rows of this UTC month so far (period=YYYY-MM), open until staff close it.',
            },
          ),
        },
      )
      .get(
        '/api/affiliate/commissions',
        async ({ principal, query, set }) => {
          const q = { ...query, kind: query.kind as CommissionRowKind | undefined }
          if (query.format !== 'csv') return cabinetCommissions(ctx, who(principal), period(query), q)
          const { name, table } = await cabinetCommissionsCsv(ctx, who(principal), period(query), q)
          return csvAnswer(set, name, table)
        },
        {
          site: signedIn,
          ...textInput({
            query: { ...RangeQuery, kind: t.Optional(CommissionKind), ...Period, ...Paging, ...Format },
          }),
          response: { 200: t.Union([PageOf(CommissionRowModel), COMMISSIONS_CSV]), ...errors() },
          detail: doc(TAG, 'The commission rows behind an earnings figure, newest first', {
            csv: true,
            description:
              'Each row with its customer, kind, amount, basis, rate (percent), period, plan and version, and the facts it derives from. ' +
              'format=csv downloads every row of the filter (no paging).',
          }),
        },
      )
      .get('/api/affiliate/statements', ({ principal }) => cabinetStatements(ctx, who(principal)), {
        site: signedIn,
        response: { 200: t.Object({ rows: t.Array(StatementModel) }), ...errors() },
        detail: doc(TAG, "The affiliate's statements on this brand, newest period first", {
          description: 'A statement is what a closed period owes: pending, approved by staff, then paid.',
        }),
      })
      .get(
        '/api/affiliate/statements/:id',
        async ({ principal, params, query, set }) => {
          if (query.format !== 'csv') return cabinetStatement(ctx, who(principal), params.id, query)
          const { name, table } = await cabinetStatementCsv(ctx, who(principal), params.id)
          return csvAnswer(set, name, table)
        },
        {
          site: signedIn,
          ...textInput({ params: { id: Id('statement id') }, query: { ...Paging, ...Format } }),
          response: {
            200: t.Union([
              t.Object(
                {
                  statement: StatementModel,
                  rows: t.Array(CommissionRowModel, {
                    description: "a page of its period's commission rows",
                  }),
                  has_more: t.Boolean(),
                  next_cursor: t.Union([t.String(), t.Null()]),
                },
                { title: 'AffiliateStatementWithRows' },
              ),
              COMMISSIONS_CSV,
            ]),
            ...errors({ 404: ['STATEMENT_NOT_FOUND'] }),
          },
          detail: doc(TAG, 'One statement of the affiliate with its rows', {
            csv: true,
            description:
              "Its rows are the commission rows of its period. Another affiliate's statement answers 404 like one that does not exist. " +
              'format=csv downloads every row.',
          }),
        },
      )
      // the single-page app: its pages (one shell) and assets, on the affiliate host only; `/` is served
      // by attribution's root route, which hands an affiliate host to this module (CabinetPort)
      .get('/login', ({ brand }) => cabinetShell(brand), page('/login'))
      .get('/links', ({ brand }) => cabinetShell(brand), page('/links'))
      .get('/conversions', ({ brand }) => cabinetShell(brand), page('/conversions'))
      .get('/reports', ({ brand }) => cabinetShell(brand), page('/reports'))
      .get('/statements', ({ brand }) => cabinetShell(brand), page('/statements'))
      .get('/statements/:id', ({ brand }) => cabinetShell(brand), {
        ...page('/statements/{id}'),
        ...textInput({ params: { id: Id('statement id') } }),
      })
      .get('/commissions', ({ brand }) => cabinetShell(brand), page('/commissions'))
      .get('/bundle.js', () => serveAsset(ctx, 'cabinet/bundle.js'), {
        site: open,
        response: errors(),
        detail: doc(TAG, 'The cabinet script', { media: ['text/javascript'] }),
      })
      .get('/bundle.css', () => serveAsset(ctx, 'cabinet/bundle.css'), {
        site: open,
        response: errors(),
        detail: doc(TAG, 'The cabinet styles', { media: ['text/css'] }),
      })
      .get('/assets/:name', ({ params }) => serveAsset(ctx, `cabinet/assets/${params.name}`), {
        site: open,
        params: t.Object({
          name: t.String({
            pattern: '^[a-z0-9-]{1,64}\\.(svg|png)$',
            description: 'asset file',
            example: 'favicon.svg',
          }),
        }),
        response: errors(),
        detail: doc(TAG, 'A cabinet asset', { media: ['image/svg+xml', 'image/png'] }),
      })
  )
}

async function linksWithUrls(ctx: FunnelCtx, p: AffiliatePrincipal, request: Request) {
  const { rows } = await myLinks(ctx, p)
  const [host] = await ctx.brands.hostsOf(p.brandId)
  const port = /:(\d+)$/.exec(request.headers.get('host') ?? '')?.[1]
  const base = `${ctx.config.production ? 'https' : 'http'}://${host ?? 'localhost'}${port ? `:${port}` : ''}`
  return { rows: rows.map((l) => ({ ...l, url: `${base}${l.path}` })) }
}
