import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { invalid } from '../../platform/errors'
import { doc, errors } from '../../platform/openapi'
import { Int, Login, Ok, textInput } from '../../platform/schemas'
import { security } from '../../platform/security'
import { addScript, deleteScript, listScripts, updateScript } from './service'

const ROLES = { roles: ['SESSION_USER', 'SESSION_MANAGER', 'SESSION_ADMIN', 'SESSION_DEALER'] as const }
/** 64 KiB of source text: ample for a trading script, small enough for a row read on every list. */
const MAX_SOURCE = 65_536

const Script = t.Object(
  {
    id: Int(),
    login: Int(),
    name: t.String(),
    script: t.String(),
    type: t.Literal('private', { description: 'the server stores every script as private' }),
    autostart: Int({ description: '0 or 1' }),
  },
  { title: 'Script' },
)
const fields = {
  login: Login,
  name: t.String({ minLength: 1, maxLength: 64 }),
  script: t.String({
    minLength: 1,
    maxLength: MAX_SOURCE,
    description: `source text, at most ${MAX_SOURCE} characters`,
  }),
  autostart: t.Optional(Int({ minimum: 0, maximum: 1 })),
  type: t.Optional(t.String({ description: 'ignored: scripts are always private' })),
}

/** GET /scripts takes the login from a JSON body, or from the query when a client cannot send one. */
async function loginOf(request: Request, query: { login?: number }) {
  if (query.login !== undefined) return query.login
  const text = await request.text().catch(() => '')
  let body: unknown
  try {
    body = text ? JSON.parse(text) : undefined
  } catch {
    throw invalid('body: malformed JSON')
  }
  const login = (body as { login?: unknown } | undefined)?.login
  if (typeof login !== 'number' || !Number.isInteger(login) || login < 0)
    throw invalid('login: required, an integer, in the JSON body or the query')
  return login
}

export const scriptRoutes = (ctx: AppContext) =>
  new Elysia({ name: 'script-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .get(
      '/scripts',
      async ({ brand, session, query, request }) =>
        listScripts(ctx, brand, session, await loginOf(request, query)),
      {
        auth: ROLES,
        ...textInput({ query: { login: t.Optional(Login) } }),
        response: { 200: t.Object({ rows: t.Array(Script) }), ...errors(400, 401, 403) },
        detail: doc('Scripts', 'Scripts of a login', {
          description:
            'login in a JSON body ({"login": 100001}) or, for clients that cannot send a body with GET, as the ' +
            'query parameter login. A user session reads its own login; staff any login of the brand. ' +
            '400 INVALID_DATA for a missing login or one the session may not see.',
        }),
      },
    )
    .post('/script', ({ brand, session, body }) => addScript(ctx, brand, session, body), {
      auth: ROLES,
      body: t.Object(fields),
      response: { 200: Ok, ...errors(400, 401, 403, 500) },
      detail: doc('Scripts', 'Add a script', {
        description:
          'type is forced to private; autostart defaults to 0. The new id is not returned (list the scripts). ' +
          `500 INVALID_ADD_SCRIPT: login not the session's, or the login already keeps 100 scripts.`,
      }),
    })
    .put('/script', ({ brand, session, body }) => updateScript(ctx, brand, session, body), {
      auth: ROLES,
      body: t.Object({ id: Int({ minimum: 1 }), ...fields }),
      response: { 200: Ok, ...errors(400, 401, 403, 500) },
      detail: doc('Scripts', 'Replace name and source of a script', {
        description:
          'autostart omitted keeps the current value. 500 INVALID_UPDATE_SCRIPT: no such script of the login.',
      }),
    })
    .delete('/script', ({ brand, session, body }) => deleteScript(ctx, brand, session, body), {
      auth: ROLES,
      body: t.Object({ id: Int({ minimum: 1 }), login: Login }),
      response: { 200: Ok, ...errors(400, 401, 403, 404) },
      detail: doc('Scripts', 'Delete a script', {
        description: '404 SCRIPT_NOT_FOUND: no such script of the login.',
      }),
    })
