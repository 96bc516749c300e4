import { openapi } from '@elysiajs/openapi'
import { Elysia, t } from 'elysia'
import type { ConfinementDeclaration } from '../auth/session'
import type { SiteDeclaration } from '../brand/sites'
import { finishDocument } from './openapi-finish'

export const API_VERSION = '1.0.0'

const statusText: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthorized',
  402: 'Payment required',
  403: 'Forbidden',
  404: 'Not found (also for records of another customer or brand)',
  409: 'Conflict',
  413: 'Payload too large',
  429: 'Too many requests',
  500: 'Internal error (the body never shows internals), or a code the route names',
  503: 'Unavailable',
}

/** The error codes a route answers beyond the ones every guarded route answers (see `finishDocument`). */
type ErrorCodes = Partial<Record<number, readonly string[]>>

const errorSchema = (status: number, codes: readonly string[]) =>
  t.Object(
    {
      error: t.String({ enum: [...codes], description: 'Stable error code' } as never),
      message: t.Optional(
        t.String({ description: 'Human-readable detail; names the field for INVALID_DATA' }),
      ),
    },
    { title: 'Error', description: statusText[status] ?? 'Error' },
  )

/**
 * Error responses of a route for its OpenAPI entry: the codes the route itself answers, per status. The
 * document adds what every route of its kind answers (INVALID_DATA, UNAUTHORIZED, FORBIDDEN or the
 * route's denial code, PAYLOAD_TOO_LARGE, BRAND_NOT_FOUND, INTERNAL_ERROR).
 */
export function errors(codes: ErrorCodes = {}) {
  const out: Record<number, ReturnType<typeof errorSchema>> = {}
  for (const [status, list] of Object.entries(codes)) out[Number(status)] = errorSchema(Number(status), list!)
  return out
}

/** OpenAPI `detail` for a route. Guarded routes get their security requirement from the guard macro. */
export function doc(
  tag: string,
  summary: string,
  opts: {
    secured?: false
    description?: string
    optionalBody?: boolean
    /** the body is read as raw bytes (a signed webhook); the JSON schema documents what is signed */
    rawBody?: Record<string, unknown>
    /** takes the optional `Idempotency-Key` header */
    idempotent?: true
    /** what a 200 holds when it is not JSON: files, HTML pages, an event stream */
    media?: string[]
    /** the route answers a redirect (302 with Location) instead of a 200: what it redirects to */
    redirect?: string
    /** `format=csv` answers text/csv: the text branch of the 200's union is documented under text/csv */
    csv?: true
  } = {},
) {
  return {
    tags: [tag],
    summary,
    ...(opts.description ? { description: opts.description } : {}),
    ...(opts.secured === false ? { security: [] } : {}),
    ...(opts.optionalBody ? { 'x-body-optional': true } : {}),
    ...(opts.rawBody ? { 'x-body-raw': opts.rawBody } : {}),
    ...(opts.idempotent ? { 'x-idempotent': true } : {}),
    ...(opts.media ? { 'x-media': opts.media } : {}),
    ...(opts.redirect ? { 'x-redirect': opts.redirect } : {}),
    ...(opts.csv ? { 'x-csv': true } : {}),
  }
}

/** An OpenAPI tag: each module declares its own (ModuleDefinition.tags); the kernel has System. */
export interface Tag {
  name: string
  description: string
}

export const SYSTEM_TAG: Tag = { name: 'System', description: 'Health and service information' }

const SWAGGER_ASSETS = ['swagger-ui-bundle.js', 'swagger-ui.css', 'favicon-32x32.png'] as const

/**
 * OpenAPI 3.0.3 at /swagger/json and Swagger UI at /swagger, its assets served from the app itself
 * (swagger-ui-dist), so the page works offline.
 */
export const openapiPlugin = (
  instanceId: number,
  loadAsset: (name: string) => Promise<Response | null>,
  tags: Tag[],
  /** what the document lists that only the composition knows (the jobs of POST /cron/{job}, the sites) */
  facts: {
    jobNames: string[]
    securitySchemes?: Record<string, Record<string, unknown>>
    examples?: Record<string, unknown>
    sites?: SiteDeclaration[]
    confinements?: readonly ConfinementDeclaration[]
  } = { jobNames: [] },
) => {
  // the generated document shares its schema objects with the routes' validators: finish a copy, once
  let finished: { from: object; doc: Record<string, unknown> } | undefined
  return (
    new Elysia({ name: 'openapi-docs', seed: instanceId })
      // local: it runs on the plugin's own routes (the document), not as one more hook of every request
      .onAfterHandle(({ path, response }) => {
        if (path !== '/swagger/json' || !response || typeof response !== 'object') return
        if (finished?.from !== response) {
          const copy = structuredClone(response) as Record<string, unknown>
          finished = { from: response, doc: finishDocument(copy, facts) }
        }
        return finished.doc
      })
      .use(
        openapi({
          path: '/swagger',
          specPath: '/swagger/json',
          provider: 'swagger-ui',
          openapiVersion: '3.0.3',
          exclude: { paths: [/^\/swagger/] },
          swagger: {
            // absolute: the page also loads from /swagger/ (a relative url fetched /swagger/swagger/json);
            // the plugin's types leave `url` to it, its page takes ours
            ...({ url: '/swagger/json' } as object),
            cdn: '/swagger/assets/swagger-ui-bundle.js',
            theme: '/swagger/assets/swagger-ui.css',
            autoDarkMode: false,
            persistAuthorization: true,
            displayRequestDuration: true,
            // a filter box (by tag) and links to each operation: with this many operations Swagger UI
            // renders the list virtualized, only what is in view
            filter: true,
            deepLinking: true,
          },
          documentation: {
            info: {
              title: 'Trading Client Service',
              version: API_VERSION,
              license: { name: 'Proprietary' },
              contact: { name: 'API support of the broker running this deployment' },
              description:
                'Brokerage client API. Send the JWT from POST /sign/in in the Authorization header, bare or as ' +
                '`Bearer <jwt>`; browsers may rely on the session cookie instead. Error bodies are JSON objects ' +
                '`{ error: CODE, message?: text }`. Clients must tolerate additional response fields.',
            },
            tags,
            components: {
              securitySchemes: {
                ApiTokenAuth: {
                  type: 'apiKey',
                  in: 'header',
                  name: 'Authorization',
                  description:
                    "The JWT from a sign-in route; `Bearer <jwt>` is accepted too. A browser may rely on the sign-in's HttpOnly cookie instead; a change (any method but GET) signed in by the cookie alone must then carry the page's Origin, of this very host, or it is refused 403 CSRF_REJECTED.",
                },
                FeedToken: {
                  type: 'apiKey',
                  in: 'header',
                  name: 'X-Feed-Token',
                  description: 'The price feed token configured in FEED_TOKEN.',
                },
                CronSecret: {
                  type: 'apiKey',
                  in: 'header',
                  name: 'X-Cron-Secret',
                  description: 'The shared secret of external schedulers, configured in CRON_SECRET.',
                },
                ...facts.securitySchemes,
              },
            },
          },
        }),
      )
      .get(
        '/swagger/assets/:file',
        async ({ params, set }) => {
          if (!(SWAGGER_ASSETS as readonly string[]).includes(params.file)) {
            set.status = 404
            return { error: 'NOT_FOUND' }
          }
          const res = await loadAsset(params.file)
          if (!res) {
            set.status = 404
            return { error: 'NOT_FOUND' }
          }
          return res
        },
        { detail: { hide: true } },
      )
  )
}
