import { openapi } from '@elysiajs/openapi'
import { Elysia, t } from 'elysia'

export const API_VERSION = '1.0.0'

export const ErrorBody = t.Object(
  {
    error: t.String({ description: 'Stable error code, e.g. INVALID_DATA' }),
    message: t.Optional(t.String({ description: 'Human-readable detail' })),
  },
  { title: 'Error' },
)

const statusText: Record<number, string> = {
  400: 'Bad request: INVALID_DATA names the field, or a route-specific code',
  401: 'Unauthorized: missing, invalid, expired or revoked token (or a route-specific code)',
  402: 'Payment required',
  403: 'Forbidden: the session may not do this',
  404: 'Not found (also for records of another customer or brand)',
  409: 'Conflict',
  413: 'Payload too large',
  429: 'Too many attempts',
  500: 'Internal error; the body never shows internals',
}

/** Error responses for a route's OpenAPI entry (and for Eden types). */
export function errors<S extends number>(...statuses: S[]) {
  const out = {} as Record<S, typeof ErrorBody>
  for (const s of statuses)
    out[s] = t.Object(ErrorBody.properties, { description: statusText[s] ?? 'Error' }) as never
  return out
}

/** OpenAPI `detail` for a route. `secured` adds the ApiTokenAuth requirement. */
export function doc(tag: string, summary: string, opts: { secured?: boolean; description?: string } = {}) {
  return {
    tags: [tag],
    summary,
    ...(opts.description ? { description: opts.description } : {}),
    ...(opts.secured === false ? { security: [] } : { security: [{ ApiTokenAuth: [] }] }),
  }
}

const TAGS = [
  { name: 'System', description: 'Health and service information' },
  { name: 'Auth', description: 'Sign-in for accounts, customers and staff; sign-out; registration' },
  { name: 'Account', description: 'Profile and balance of trading accounts' },
  { name: 'Uploads', description: 'File uploads (avatars, documents)' },
  { name: 'Trading', description: 'Orders and positions: open, modify, close, cancel, list, history' },
  { name: 'Market', description: 'Market watch, symbols, quotes (SSE stream and ingest)' },
  { name: 'Manager', description: 'Back-office routes for manager, admin and dealer sessions' },
  { name: 'Price alerts', description: 'Price alerts of an account login, evaluated on every tick' },
  { name: 'Scripts', description: 'User scripts of an account login' },
  { name: 'Notifications', description: 'Notifications of an account login; staff messages and broadcasts' },
  {
    name: 'Reference data',
    description:
      'Staff maintenance of symbols (deployment-wide), group security settings and symbol overrides',
  },
]

const SWAGGER_ASSETS = ['swagger-ui-bundle.js', 'swagger-ui.css', 'favicon-32x32.png'] as const

/**
 * OpenAPI 3.0.3 at /swagger/json and Swagger UI at /swagger, its assets served from the app itself
 * (swagger-ui-dist), so the page works offline.
 */
export const openapiPlugin = (instanceId: number, loadAsset: (name: string) => Promise<Response | null>) =>
  new Elysia({ name: 'openapi-docs', seed: instanceId })
    .use(
      openapi({
        path: '/swagger',
        specPath: '/swagger/json',
        provider: 'swagger-ui',
        openapiVersion: '3.0.3',
        exclude: { paths: [/^\/swagger/] },
        swagger: {
          cdn: '/swagger/assets/swagger-ui-bundle.js',
          theme: '/swagger/assets/swagger-ui.css',
          autoDarkMode: false,
          persistAuthorization: true,
          displayRequestDuration: true,
        },
        documentation: {
          info: {
            title: 'Trading Client Service',
            version: API_VERSION,
            description:
              'Brokerage client API. Send the JWT from POST /sign/in in the Authorization header, bare or as ' +
              '`Bearer <jwt>`; browsers may rely on the session cookie instead. Error bodies are ' +
              '`{ "error": CODE, "message"?: text }`. Clients must tolerate additional response fields.',
          },
          tags: TAGS,
          components: {
            securitySchemes: {
              ApiTokenAuth: {
                type: 'apiKey',
                in: 'header',
                name: 'Authorization',
                description: 'The JWT from a sign-in route; `Bearer <jwt>` is accepted too.',
              },
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
