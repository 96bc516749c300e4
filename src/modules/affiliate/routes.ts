import { Elysia, t } from 'elysia'
import { doc, errors } from '../../kernel/http/openapi'
import { Id, Int, nameModels, Ok, OneOf, Password, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import type { AffiliateCtx } from './context'
import { CONVERSION_KINDS } from './domain/conversions'
import {
  createAffiliate,
  listAffiliates,
  readAffiliate,
  setAccess,
  updateAffiliate,
} from './service/affiliates'
import { conversionWithFacts, listConversions } from './service/conversions'
import type { AffiliateDirectory } from './service/directory'
import { createLink, listLinks, updateLink } from './service/links'
import { createPostbackKey, deletePostbackKey, listPostbacks } from './service/postbacks'
import { readSettings, updateSettings } from './service/settings'

const STAFF = { roles: ['SESSION_MANAGER', 'SESSION_ADMIN'] as const }
const TAG = 'Affiliates back office'
const CODE = t.String({
  pattern: '^[A-Za-z0-9_-]{2,32}$',
  description: 'letters, digits, _ and -, 2..32 characters (travels in public URLs)',
  example: 'DEMOPARTNER',
})

const Affiliate = t.Object(
  {
    id: Int(),
    email: t.String({ description: "'' for an affiliate of another brand (its home brand's)" }),
    code: t.String(),
    name: t.String(),
    status: OneOf(['active', 'suspended'], { description: 'a suspended affiliate earns nothing new' }),
    home_brand_id: Int({ description: 'the brand that created it (staff there change its profile)' }),
    access_status: OneOf(['active', 'revoked', 'none'], {
      description: 'its access to this brand (none: never granted)',
    }),
    postback_url: t.String({ description: "'' for none" }),
    postback_enabled: t.Boolean({ description: 'false after 20 failed sends in a row (see the reason)' }),
    postback_failures: Int({ description: 'failed sends in a row' }),
    postback_disabled_reason: t.String(),
    postback_key_ids: t.Array(t.String(), { description: 'signing keys, newest (the one that signs) first' }),
    created_time: Int({ description: 'epoch seconds' }),
  },
  {
    description:
      "An affiliate as this brand's staff see it. Of an affiliate of another brand that has access here, only what concerns this brand: email and the postback settings (its home brand's) are empty.",
  },
)
const Link = t.Object({
  id: Int(),
  affiliate_id: Int(),
  code: t.String(),
  landing_path: t.String({ description: 'where /go/{code} redirects on the same host' }),
  campaign: t.String(),
  active: t.Boolean(),
  url_path: t.String({ description: 'the tracking path on any of the brand hosts: /go/{code}' }),
  created_time: Int({ description: 'epoch seconds' }),
})
export const Conversion = t.Object({
  id: Int(),
  kind: t.String({
    enum: [...CONVERSION_KINDS],
    description: 'conversion kind (README of the affiliate module)',
  } as never),
  value: t.Union([t.Number(), t.Null()], {
    description:
      'deposit kinds: amount in the currency (reversals negative); active_trader: lots; registration and kyc_approval: null',
  }),
  currency: t.String(),
  reference_id: t.String({ description: 'cashier transaction id, ticket, or customer id' }),
  event_time: Int({ description: 'when it happened (epoch seconds)' }),
  affiliate_id: Int(),
  link_id: t.Union([Int(), t.Null()]),
  customer_id: Int(),
  brand_id: Int(),
})
const Settings = t.Object({
  affiliate_host: t.String({ description: 'hostname of the affiliate cabinet (no scheme, port or path)' }),
  postback_hosts: t.Array(t.String(), {
    description:
      'hosts postback URLs may point to: `hostname` (ports 80 and 443) or `hostname:port` (that port); never internal ones (loopback, private, link-local, metadata), checked again after resolution at each send',
  }),
  active_trader_lots: t.Number({
    description: 'closed lots on REAL accounts that make an active trader; 0: the first closed trade',
  }),
})
const Page = {
  before: t.Optional(Id('next_before of the previous page')),
  limit: t.Optional(Int({ minimum: 1, maximum: 500, description: 'rows per page (default 100)' })),
}
const AffiliateId = { id: Id('affiliate id') }

export const affiliateStaffRoutes = (ctx: AffiliateCtx, dir: AffiliateDirectory) =>
  new Elysia({ name: 'affiliate-staff', seed: ctx.instanceId })
    .use(security(ctx))
    .get('/manager/affiliates', ({ brand, query }) => listAffiliates(ctx, brand.id, query), {
      auth: STAFF,
      ...textInput({
        query: {
          status: t.Optional(
            t.UnionEnum(['active', 'suspended'], { default: undefined, description: 'filter' }),
          ),
          ...Page,
        },
      }),
      response: { 200: t.Object({ rows: t.Array(Affiliate), next_before: Int() }), ...errors() },
      detail: doc(TAG, 'Affiliates with access to the brand'),
    })
    .post('/manager/affiliates', ({ brand, body }) => createAffiliate(ctx, brand.id, body), {
      auth: STAFF,
      body: t.Object(
        {
          email: t.String({ format: 'email', maxLength: 254, description: 'cabinet login (or the code)' }),
          code: CODE,
          name: t.Optional(t.String({ maxLength: 128, description: 'display name' })),
          password: t.String({ ...Password, description: 'cabinet password on this brand (6..64)' }),
          postback_url: t.Optional(
            t.String({ maxLength: 512, description: "on the brand's postback_hosts" }),
          ),
        },
        {
          example: {
            email: 'new-partner@example.com',
            code: 'PARTNER1',
            name: 'Partner One',
            password: 'partner-pass-9',
          },
        },
      ),
      response: {
        200: Affiliate,
        ...errors({ 400: ['POSTBACK_HOST_NOT_ALLOWED'], 409: ['AFFILIATE_EXISTS'] }),
      },
      detail: doc(TAG, 'Create an affiliate of the brand', {
        description:
          'With access to this brand and its cabinet password here. Email and code are unique in the deployment.',
      }),
    })
    .get('/manager/affiliates/:id', ({ brand, params }) => readAffiliate(ctx, brand.id, params.id), {
      auth: STAFF,
      ...textInput({ params: AffiliateId }),
      response: { 200: Affiliate, ...errors({ 404: ['AFFILIATE_NOT_FOUND'] }) },
      detail: doc(TAG, 'An affiliate'),
    })
    .patch(
      '/manager/affiliates/:id',
      ({ brand, params, body }) => updateAffiliate(ctx, dir, brand.id, params.id, body),
      {
        auth: STAFF,
        // the example suspends the affiliate the create example made
        ...textInput({ params: { id: Id('affiliate id', 3) } }),
        body: t.Object(
          {
            name: t.Optional(t.String({ maxLength: 128, description: 'display name' })),
            status: t.Optional(
              t.UnionEnum(['active', 'suspended'], {
                default: undefined,
                description:
                  'suspended: its codes stop attributing, its tokens stop working, its cabinet sessions end (active again revives none), and its postbacks wait until it is active again',
              }),
            ),
            password: t.Optional(
              t.String({
                ...Password,
                description: 'new cabinet password on this brand: its open cabinet sessions there end',
              }),
            ),
            postback_url: t.Optional(
              t.String({
                maxLength: 512,
                description:
                  "'' removes it: its pending postbacks are not sent but parked, sent once a URL is saved again, dead if none is within 30 days; a URL saved wakes the postbacks parked for a setting",
              }),
            ),
            postback_enabled: t.Optional(
              t.Boolean({
                description:
                  'true re-enables a disabled endpoint: the postbacks of conversions made while it was disabled are sent then',
              }),
            ),
          },
          { example: { status: 'suspended' }, minProperties: 1 },
        ),
        response: {
          200: Affiliate,
          ...errors({
            400: ['POSTBACK_HOST_NOT_ALLOWED'],
            403: ['NOT_HOME_BRAND'],
            404: ['AFFILIATE_NOT_FOUND'],
          }),
        },
        detail: doc(TAG, 'Change an affiliate', {
          description:
            "Profile, status and postbacks by staff of its home brand; the password of this brand's cabinet by staff of any brand it has access to.",
        }),
      },
    )
    .put(
      '/manager/affiliates/access/:code',
      ({ brand, params, body }) => setAccess(ctx, dir, brand.id, params.code, body),
      {
        auth: STAFF,
        params: t.Object({ code: CODE }),
        body: t.Object(
          {
            status: t.UnionEnum(['active', 'revoked'], {
              default: undefined,
              description: 'grant or revoke; while revoked it earns nothing new on this brand',
            }),
            password: t.Optional(
              t.String({
                ...Password,
                description: 'cabinet password on this brand (required on a first grant)',
              }),
            ),
          },
          { example: { status: 'active', password: 'partner-pass-1' } },
        ),
        response: { 200: Affiliate, ...errors({ 404: ['AFFILIATE_NOT_FOUND'] }) },
        detail: doc(TAG, "Grant or revoke an affiliate's access to this brand (by its code)"),
      },
    )
    .post(
      '/manager/affiliates/:id/postback-keys',
      ({ brand, params }) => createPostbackKey(ctx, brand.id, params.id),
      {
        auth: STAFF,
        ...textInput({ params: AffiliateId }),
        response: {
          200: t.Object({ key_id: t.String(), secret: t.String({ description: 'shown once' }) }),
          ...errors({ 403: ['NOT_HOME_BRAND'], 404: ['AFFILIATE_NOT_FOUND'] }),
        },
        detail: doc(TAG, 'Create a postback signing key (the secret is shown once)', {
          optionalBody: true,
          description:
            'The newest key signs: X-Postback-Signature `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">` and X-Postback-Key-Id. ' +
            'Rotate by creating a key, moving the receiver to it, then deleting the old one.',
        }),
      },
    )
    .delete(
      '/manager/affiliates/:id/postback-keys/:key_id',
      async ({ brand, params }) => {
        await deletePostbackKey(ctx, brand.id, params.id, params.key_id)
        return { data: 'OK' as const }
      },
      {
        auth: STAFF,
        ...textInput({
          params: {
            ...AffiliateId,
            key_id: t.String({ maxLength: 40, description: 'key id', example: 'pk_3f9a1c0d2b7e' }),
          },
        }),
        response: {
          200: Ok,
          ...errors({ 403: ['NOT_HOME_BRAND'], 404: ['AFFILIATE_NOT_FOUND', 'KEY_NOT_FOUND'] }),
        },
        detail: doc(TAG, 'Delete a postback signing key', {
          description: 'By staff of its home brand (another brand: 403 NOT_HOME_BRAND).',
        }),
      },
    )
    .get('/manager/affiliate-links', ({ brand, query }) => listLinks(ctx, brand.id, query), {
      auth: STAFF,
      ...textInput({ query: { affiliate_id: t.Optional(Id('affiliate id')), ...Page } }),
      response: { 200: t.Object({ rows: t.Array(Link), next_before: Int() }), ...errors() },
      detail: doc(TAG, 'Tracking links of the brand'),
    })
    .post('/manager/affiliate-links', ({ brand, body }) => createLink(ctx, dir, brand.id, body), {
      auth: STAFF,
      body: t.Object(
        {
          affiliate_id: Id('affiliate id'),
          code: CODE,
          landing_path: t.Optional(
            t.String({ maxLength: 512, description: "a path on the brand ('/' by default)" }),
          ),
          campaign: t.Optional(
            t.String({
              maxLength: 128,
              description: 'campaign recorded on its clicks (unless the URL names one)',
            }),
          ),
        },
        { example: { affiliate_id: 1, code: 'spring-promo', landing_path: '/p/promo', campaign: 'spring' } },
      ),
      response: {
        200: Link,
        ...errors({ 404: ['AFFILIATE_NOT_FOUND'], 409: ['LINK_EXISTS', 'AFFILIATE_NOT_ACTIVE'] }),
      },
      detail: doc(TAG, 'Create a tracking link', {
        description:
          'For an affiliate with active access to this brand: a suspended one, or one whose access here is revoked, is 409 AFFILIATE_NOT_ACTIVE.',
      }),
    })
    .patch(
      '/manager/affiliate-links/:id',
      ({ brand, params, body }) => updateLink(ctx, dir, brand.id, params.id, body),
      {
        auth: STAFF,
        ...textInput({ params: { id: Id('link id') } }),
        body: t.Object(
          {
            landing_path: t.Optional(
              t.String({ maxLength: 512, description: 'a path on the brand, starting with one /' }),
            ),
            campaign: t.Optional(
              t.String({
                maxLength: 128,
                description: 'campaign recorded on its clicks (unless the URL names one)',
              }),
            ),
            active: t.Optional(t.Boolean({ description: 'false: clicks are recorded unattributed' })),
          },
          { example: { active: false }, minProperties: 1 },
        ),
        response: { 200: Link, ...errors({ 404: ['LINK_NOT_FOUND'] }) },
        detail: doc(TAG, 'Change a tracking link'),
      },
    )
    .get('/manager/affiliate-settings', ({ brand }) => readSettings(ctx, brand.id), {
      auth: STAFF,
      response: { 200: Settings, ...errors() },
      detail: doc(TAG, "The brand's affiliate settings"),
    })
    .put('/manager/affiliate-settings', ({ brand, body }) => updateSettings(ctx, brand.id, body), {
      auth: STAFF,
      body: t.Object(
        {
          affiliate_host: t.Optional(
            t.String({ maxLength: 253, description: 'hostname only: no scheme, port or path' }),
          ),
          postback_hosts: t.Optional(
            t.Array(t.String({ maxLength: 253 }), {
              maxItems: 50,
              description:
                'hostnames postback URLs may point to, `hostname` (ports 80 and 443) or `hostname:port` (replaces the list)',
            }),
          ),
          active_trader_lots: t.Optional(
            t.Number({ minimum: 0, maximum: 100_000, description: 'lots, in steps of 0.01' }),
          ),
        },
        {
          // the demo brand's own settings: trying the example leaves its cabinet where the README says
          example: {
            affiliate_host: 'affiliates.localhost',
            postback_hosts: ['postbacks.example.com'],
            active_trader_lots: 0,
          },
          minProperties: 1,
        },
      ),
      response: { 200: Settings, ...errors({ 409: ['HOST_TAKEN'] }) },
      detail: doc(TAG, "Change the brand's affiliate settings"),
    })
    .get('/manager/affiliate-conversions', ({ brand, query }) => listConversions(ctx, brand.id, query), {
      auth: STAFF,
      ...textInput({
        query: {
          affiliate_id: t.Optional(Id('affiliate id')),
          customer_id: t.Optional(Id('customer id')),
          kind: t.Optional(
            t.UnionEnum([...CONVERSION_KINDS], { default: undefined, description: 'conversion kind' }),
          ),
          ...Page,
        },
      }),
      response: { 200: t.Object({ rows: t.Array(Conversion), next_before: Int() }), ...errors() },
      detail: doc(TAG, 'Conversions of the brand, newest first'),
    })
    .get(
      '/manager/affiliate-conversions/:id',
      ({ brand, params }) => conversionWithFacts(ctx, brand.id, params.id),
      {
        auth: STAFF,
        ...textInput({ params: { id: Id('conversion id') } }),
        response: {
          200: t.Object({
            conversion: Conversion,
            facts: t.Array(
              t.Object(
                {
                  kind: t.String({ description: 'registration | kyc | deposit | reversal | trade' }),
                  reference: t.String(),
                  value_minor: t.Union([Int(), t.Null()]),
                  currency: t.String(),
                  volume: Int({ description: 'trades: hundredths of a lot' }),
                  event_id: Int({ description: 'the outbox event it came from' }),
                  event_time: Int({ description: 'epoch seconds' }),
                },
                { title: 'ConversionFact' },
              ),
              {
                description:
                  'every event of the customer the ledger recorded, in time order: the row re-derives from them',
              },
            ),
          }),
          ...errors({ 404: ['CONVERSION_NOT_FOUND'] }),
        },
        detail: doc(TAG, 'A conversion and the events it derives from'),
      },
    )
    .get('/manager/affiliate-postbacks', ({ brand, query }) => listPostbacks(ctx, brand.id, query), {
      auth: STAFF,
      ...textInput({
        query: {
          status: t.Optional(
            t.UnionEnum(['pending', 'sent', 'dead'], { default: undefined, description: 'filter' }),
          ),
          affiliate_id: t.Optional(Id('affiliate id')),
          limit: Page.limit,
        },
      }),
      response: {
        200: t.Object({
          rows: t.Array(
            t.Object(
              {
                id: Int(),
                affiliate_id: Int(),
                conversion_id: Int(),
                status: OneOf(['pending', 'sent', 'dead'], {
                  description:
                    'dead: given up, after its last attempt, or (attempts 0 possible) refused by a setting (no postback_url, no signing key, a host off postback_hosts) not fixed within 30 days of its first refusal; last_error says which',
                }),
                attempts: Int(),
                next_time: Int({
                  description:
                    'epoch seconds of the next send; a postback parked for a setting (pending, last_error says which) shows the end of its 30 days, but is sent at the next pass once the setting is fixed (a key created, the postback_url or postback_hosts saved)',
                }),
                last_error: t.String(),
                sent_time: Int({ description: 'epoch seconds; 0 until sent' }),
              },
              { title: 'Postback' },
            ),
          ),
        }),
        ...errors(),
      },
      detail: doc(TAG, 'Postbacks of the brand (pending, sent, dead), newest first'),
    })

nameModels({ Affiliate, TrackingLink: Link, AffiliateConversion: Conversion, AffiliateSettings: Settings })
