import { Elysia, t } from 'elysia'
import type { Brand } from '../../kernel/brand/registry'
import { normalizeHost } from '../../kernel/brand/registry'
import { BRAND_SITE } from '../../kernel/brand/sites'
import { ApiError } from '../../kernel/http/errors'
import { clientIp } from '../../kernel/http/http'
import { doc, errors } from '../../kernel/http/openapi'
import { Id, Int, nameModels, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import type { AttributionCtx } from './context'
import { countryOf } from './domain/country'
import { PARAM_NAMES } from './domain/params'
import { customerAttribution } from './service/customer-attribution'
import { activateInstall, recordInstall } from './service/installs'
import { type Hit, linkClick, loadPage, pageVisit } from './service/landing'

const TAG = 'Marketing attribution'
const STAFF = { roles: ['SESSION_MANAGER', 'SESSION_ADMIN'] as const }

/** The public values a page or link takes (documented; anything else is ignored, never refused). */
const QUERY = Object.fromEntries(
  PARAM_NAMES.map((n) => [
    n,
    t.Optional(
      t.String({
        description:
          n === 'affiliate'
            ? 'affiliate code (aliases aff, aff_id, af_code)'
            : n === 'link'
              ? 'tracking link code'
              : n === 'click_id'
                ? 'ad network click id (aliases gclid, fbclid, ttclid)'
                : `${n} value`,
      }),
    ),
  ]),
)
const PAGE_NOTE =
  'Attribution values in the query are recorded as a touch of the brand of the Host, with the landing path, ' +
  'referrer and time, under the first-party visitor cookie `tcs_vid` (HttpOnly, SameSite=Lax, Secure in production). ' +
  'Values are not credentials: unknown codes are recorded unattributed, values over 128 characters or not plain text are dropped, ' +
  'nothing here ever answers an error for them; of a repeated name the first value counts. A visit without values is recorded ' +
  'only when it comes from another site. A visit naming an affiliate or link is a click of its funnel: once per visitor, ' +
  'affiliate and link an hour is it unique (a link followed with `/go/{code}` included), and an address hitting like a script ' +
  '(over 30 clicks a minute, more than 8 user agents in 10 minutes) marks it suspect; both still count as raw clicks.'

// the page's policy and referrer rule ride in its <head> (service/landing.ts): a header less per hit
const SECURITY_HEADERS = { 'x-content-type-options': 'nosniff' }

// the same keys as the registration's attribution (auth): lower-case names of 1-32 characters
const Values = t.Record(t.String({ pattern: '^[a-z][a-z0-9_]{0,31}$' }), t.String({ maxLength: 256 }), {
  description: `public attribution values: ${PARAM_NAMES.join(', ')} (and their aliases); other names are ignored`,
  maxProperties: 20,
})
const Install = t.Object({
  installation_id: t.String(),
  platform: t.String(),
  attributed: t.Boolean({
    description: 'the install carried attribution values (it can win a registration)',
  }),
  created_time: Int({ description: 'epoch seconds' }),
  activated_time: Int({ description: 'first open (epoch seconds); 0 until POST /app/activate' }),
})
const INSTALLATION_ID = t.String({
  pattern: '^[A-Za-z0-9._:-]{8,128}$',
  description: "the app's own id of this installation (8..128 of letters, digits . _ : -)",
})
const Touch = t.Object({
  id: Int(),
  source: t.String({ description: 'page | click | install | registration' }),
  visitor_id: t.Union([t.String(), t.Null()]),
  installation_id: t.Union([t.String(), t.Null()]),
  affiliate_id: t.Union([Int(), t.Null()]),
  link_id: t.Union([Int(), t.Null()]),
  values: t.Record(t.String(), t.String()),
  direct: t.Boolean({ description: 'no attribution values (a visit from a referring site)' }),
  bot: t.Boolean({ description: 'a crawler or script by user agent: never wins' }),
  landing_path: t.String(),
  referrer: t.String(),
  created_time: Int({ description: 'epoch seconds' }),
})

const GO_INPUT = textInput(
  {
    params: {
      code: t.String({
        minLength: 1,
        description: 'link code (a value over 128 characters or not plain text is dropped, never refused)',
        example: 'demo-spring',
      }),
    },
    query: QUERY,
  },
  { repeatedQuery: 'allowed' },
)

interface HitContext {
  brand: Brand
  request: Request
  server: Parameters<typeof clientIp>[2]
  path: string
}

/**
 * The request's query string as sent: every value of a repeated name, in order, so that the first wins
 * (Elysia's parsed query keeps the last).
 */
function queryOf(url: string) {
  const at = url.indexOf('?')
  return new URLSearchParams(at === -1 ? '' : url.slice(at + 1))
}

/**
 * The code of `/go/{code}` as the path has it when Elysia could not decode it (`/go/%`): a value never
 * answers an error, so the raw text stands (and is dropped as a value if not plain text).
 */
function rawCode({ params, request }: { params: Record<string, unknown>; request: Request }) {
  if (typeof params.code === 'string') return
  const path = new URL(request.url).pathname
  params.code = path.slice(path.lastIndexOf('/') + 1)
}

function hitOf(ctx: AttributionCtx, { brand, request, server, path }: HitContext): Hit {
  const h = request.headers
  return {
    brand,
    host: normalizeHost(h.get('host')),
    path,
    query: queryOf(request.url),
    cookies: h.get('cookie'),
    referrer: h.get('referer') ?? '',
    userAgent: h.get('user-agent'),
    ip: clientIp(ctx, request, server),
    // set by Cloudflare in front (or the edge itself); from anyone else it is the client's word
    country: ctx.config.trustProxy || ctx.edge ? countryOf(h.get('cf-ipcountry')) : '',
  }
}

export const attributionRoutes = (ctx: AttributionCtx) => {
  const page = async (brand: Brand, name: string, hit: Hit, set: { headers: Record<string, unknown> }) => {
    const file = await loadPage(ctx, brand, name)
    if (!file) throw new ApiError(404, 'NOT_FOUND', 'no such page')
    const { setCookie } = await pageVisit(ctx, hit)
    // the visit is recorded per request: a shared cache must not answer for it
    const headers: Record<string, string> = {
      ...SECURITY_HEADERS,
      'content-type': file.type,
      'cache-control': 'private, no-store',
    }
    if (setCookie) headers['set-cookie'] = setCookie
    // Elysia builds the answer of a text and the context's headers faster than a Response made here
    Object.assign(set.headers, headers)
    return file.body
  }
  return new Elysia({ name: 'attribution', seed: ctx.instanceId })
    .use(security(ctx))
    .get(
      '/',
      async ({ brand, principal, request, server, path, set }) =>
        (principal as { site: string }).site === ctx.cabinet.site
          ? ctx.cabinet.shell(brand)
          : page(brand, 'index', hitOf(ctx, { brand, request, server, path }), set),
      {
        site: {
          site: [BRAND_SITE, ctx.cabinet.site],
          access:
            "public. On a brand host, its landing page; on the brand's affiliate_host, the affiliate cabinet.",
        },
        ...textInput({ query: QUERY }, { repeatedQuery: 'allowed' }),
        response: errors({ 404: ['NOT_FOUND'] }),
        detail: doc(TAG, "The brand's landing page (the affiliate cabinet on its affiliate host)", {
          secured: false,
          media: ['text/html'],
          description: PAGE_NOTE,
        }),
      },
    )
    .get(
      '/p/:page',
      ({ brand, params, request, server, path, set }) =>
        page(brand, params.page, hitOf(ctx, { brand, request, server, path }), set),
      {
        brand: true,
        ...textInput(
          {
            params: {
              page: t.String({
                pattern: '^[a-z0-9-]{1,64}$',
                description: 'page name: site/<brand>/<page>.html',
                example: 'promo',
              }),
            },
            query: QUERY,
          },
          { repeatedQuery: 'allowed' },
        ),
        response: errors({ 404: ['NOT_FOUND'] }),
        detail: doc(TAG, 'A static page of the brand', {
          secured: false,
          media: ['text/html'],
          description: `Pages come from site/<brand>/ (else site/default/); 404 NOT_FOUND when neither has it. ${PAGE_NOTE}`,
        }),
      },
    )
    .get(
      '/go/:code',
      // named, not `(c) =>`: Elysia builds only the parts of the context a handler names
      async ({ brand, params, request, server, path }) => {
        const r = await linkClick(ctx, hitOf(ctx, { brand, request, server, path }), params.code)
        const headers = new Headers({
          location: r.location,
          'cache-control': 'private, no-store',
          'referrer-policy': 'no-referrer',
        })
        if (r.setCookie) headers.append('set-cookie', r.setCookie)
        return new Response(null, { status: 302, headers })
      },
      {
        brand: true,
        ...GO_INPUT,
        // before validation: a code Elysia could not decode stands as sent
        transform: [rawCode, GO_INPUT.transform],
        response: { 302: t.Null({ description: 'redirect' }), ...errors() },
        detail: doc(TAG, 'Follow a tracking link (302 to its landing page on this host)', {
          secured: false,
          redirect: "to the link's landing path, or / for an unknown or inactive code",
          description:
            'Records the click (unique once per visitor, affiliate and link an hour, whether followed here or opened as `/?link=`) ' +
            "and redirects to the link's landing path on the same host; an unknown or inactive code is recorded unattributed " +
            'and redirects to `/`. The code is a value like those of the query: one over 128 characters, not plain text or not ' +
            'decodable is recorded without it and redirects to `/`, never an error. The Location is always a path: ' +
            'this route never redirects to another host. sub1..sub5, click_id and utm_* of the query ride on the touch ' +
            '(of a repeated name the first value counts).',
        }),
      },
    )
    .post(
      '/app',
      ({ brand, body, request, server }) =>
        recordInstall(ctx, brand.id, body, {
          ip: clientIp(ctx, request, server),
          userAgent: request.headers.get('user-agent'),
        }),
      {
        brand: true,
        body: t.Object(
          {
            installation_id: INSTALLATION_ID,
            platform: t.UnionEnum(['ios', 'android'], {
              default: undefined,
              description: 'the store it came from',
            }),
            attribution: t.Optional(Values),
            referrer: t.Optional(
              t.String({
                maxLength: 1024,
                description: "the store's install referrer (utm_source=…&affiliate=…)",
              }),
            ),
          },
          {
            example: {
              installation_id: 'ios-6f1c2a9e-0b7d-4b43',
              platform: 'ios',
              attribution: { affiliate: 'DEMOPARTNER', utm_source: 'partner' },
            },
          },
        ),
        response: { 200: Install, ...errors() },
        detail: doc(TAG, 'Record an app install', {
          secured: false,
          description:
            'The first report of an installation_id records it with its values (given, or read from the store referrer); ' +
            'a replay answers the same install and changes nothing. Register with `installation_id` to be attributed from it.',
        }),
      },
    )
    .post('/app/activate', ({ brand, body }) => activateInstall(ctx, brand.id, body.installation_id), {
      brand: true,
      body: t.Object(
        { installation_id: INSTALLATION_ID },
        { example: { installation_id: 'ios-6f1c2a9e-0b7d-4b43' } },
      ),
      response: { 200: Install, ...errors({ 404: ['INSTALL_NOT_FOUND'] }) },
      detail: doc(TAG, "Record an install's first open", {
        secured: false,
        description: 'A replay keeps the first time.',
      }),
    })
    .get(
      '/manager/customers/:id/attribution',
      ({ brand, params }) => customerAttribution(ctx, brand.id, params.id),
      {
        auth: STAFF,
        ...textInput({ params: { id: Id('customer id') } }),
        response: {
          200: t.Object(
            {
              customer_id: Int(),
              attribution: t.Union([t.Record(t.String(), t.String()), t.Null()], {
                description: 'what the customer record holds',
              }),
              won_by: t.String({
                description:
                  'install | registration_body | last_touch | last_direct | none | self_referral (README)',
              }),
              window_days: Int(),
              touch: t.Union([Touch, t.Null()], { description: 'the touch that won' }),
              considered: t.Array(Touch, { description: 'every touch the decision looked at, newest first' }),
            },
            { title: 'CustomerAttribution' },
          ),
          ...errors({ 404: ['CUSTOMER_NOT_FOUND'] }),
        },
        detail: doc(TAG, "A customer's attribution: the touch that won, the touches considered, the rule"),
      },
    )
}

nameModels({ AppInstall: Install, AttributionTouch: Touch })
