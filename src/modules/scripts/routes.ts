import { Elysia, t } from 'elysia'
import { announcesBody, readBody } from '../../kernel/http/body'
import { invalid } from '../../kernel/http/errors'
import { doc, errors } from '../../kernel/http/openapi'
import { Id, Int, Login, Ok, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import type { ScriptsCtx } from './context'
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
  name: t.String({ minLength: 1, maxLength: 64, description: 'script name shown in the terminal' }),
  script: t.String({
    minLength: 1,
    // characters here; the service holds the source to MAX_SOURCE bytes of UTF-8
    maxLength: MAX_SOURCE,
    description: `source text, at most ${MAX_SOURCE} bytes of UTF-8`,
  }),
  autostart: t.Optional(
    Int({ minimum: 0, maximum: 1, description: '1 starts the script with the terminal' }),
  ),
  // spec 4.6: a sent type is ignored, whatever it is (a number, null, an object, a long text)
  type: t.Optional(t.Unknown({ description: 'ignored, whatever its value: scripts are always private' })),
}
const EXAMPLE = { login: 100001, name: 'MA cross', script: 'input int fast = 9;', autostart: 0 }

/**
 * GET /scripts takes the login from a JSON body, or from the query when a client cannot send one.
 * Bun.serve drops the body of a GET before the app sees it (ADR 0015): a request that announced one is
 * told to use the query instead of being answered as if it had sent nothing. Workers deliver it: it is read
 * as every other JSON body is (kernel/http/body.ts), at most BODY_MAX_BYTES (413 PAYLOAD_TOO_LARGE),
 * application/json, unsafe text refused.
 */
async function loginOf(ctx: ScriptsCtx, request: Request, query: { login?: number }) {
  if (query.login !== undefined) return query.login
  // a dropped body is null: its announced length is not read (it would parse as malformed JSON)
  const body = request.body ? await readBody(request, 'json', ctx.config.body.maxBytes) : undefined
  if (body === undefined && announcesBody(request))
    throw invalid(
      'login: this server cannot read the body of a GET request (Bun.serve drops it); send login as the query parameter: GET /scripts?login=<login>',
    )
  const login = (body as { login?: unknown } | undefined)?.login
  if (typeof login !== 'number' || !Number.isSafeInteger(login) || login < 0)
    throw invalid('login: required, an integer, in the JSON body or the query')
  return login
}

export const scriptRoutes = (ctx: ScriptsCtx) =>
  new Elysia({ name: 'script-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .get(
      '/scripts',
      async ({ brand, session, query, request }) =>
        listScripts(ctx, brand, session, await loginOf(ctx, request, query)),
      {
        auth: ROLES,
        ...textInput({ query: { login: t.Optional(Login) } }),
        response: { 200: t.Object({ rows: t.Array(Script) }), ...errors() },
        detail: doc('Scripts', 'Scripts of a login', {
          description:
            'The login as the query parameter `login` (portable: use it), or in a JSON body ({"login": 100001}) ' +
            'where the server receives GET bodies: a deployment at the edge (Workers) does; the Bun server drops ' +
            'them, and such a request answers 400 INVALID_DATA saying so. A body is read as on POST: application/json, ' +
            'at most the JSON body limit (413 PAYLOAD_TOO_LARGE). A user session reads its own login; ' +
            'staff any login of the brand. 400 INVALID_DATA for a missing login or one the session may not see.',
        }),
      },
    )
    .post('/script', ({ brand, session, body }) => addScript(ctx, brand, session, body), {
      auth: ROLES,
      body: t.Object(fields, { example: EXAMPLE }),
      response: { 200: Ok, ...errors({ 500: ['INVALID_ADD_SCRIPT'] }) },
      detail: doc('Scripts', 'Add a script', {
        description:
          'A sent type is ignored, whatever its value (scripts are always private); autostart defaults to 0. The new id is not returned (list the scripts). ' +
          `500 INVALID_ADD_SCRIPT: login not the session's, or the login already keeps 100 scripts.`,
      }),
    })
    .put('/script', ({ brand, session, body }) => updateScript(ctx, brand, session, body), {
      auth: ROLES,
      body: t.Object({ id: Id('script id (GET /scripts)'), ...fields }, { example: { id: 1, ...EXAMPLE } }),
      response: { 200: Ok, ...errors({ 500: ['INVALID_UPDATE_SCRIPT'] }) },
      detail: doc('Scripts', 'Replace name and source of a script', {
        description:
          'autostart omitted keeps the current value. 500 INVALID_UPDATE_SCRIPT: no such script of the login.',
      }),
    })
    .delete('/script', ({ brand, session, body }) => deleteScript(ctx, brand, session, body), {
      auth: ROLES,
      body: t.Object(
        { id: Id('script id (GET /scripts)'), login: Login },
        { example: { id: 1, login: 100001 } },
      ),
      response: { 200: Ok, ...errors({ 404: ['SCRIPT_NOT_FOUND'] }) },
      detail: doc('Scripts', 'Delete a script', {
        description: '404 SCRIPT_NOT_FOUND: no such script of the login.',
      }),
    })
