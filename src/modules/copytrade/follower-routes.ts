import { Elysia, t } from 'elysia'
import { doc } from '../../kernel/http/openapi'
import { Ok, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import type { CopyCtx } from './context'
import { CUSTOMER, err, LoginParam, owner, TAG } from './route-common'
import { Follower, FollowerBody, FollowerSettingsBody } from './route-schemas'
import { createFollower, deleteFollower, myFollowers, updateFollower } from './service/followers'

/** A customer's follower profiles (spec 4.12). */
export const followerRoutes = (ctx: CopyCtx) =>
  new Elysia({ name: 'copytrade-follower-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .post(
      '/copytrade/follower',
      ({ brand, session, body }) => createFollower({ ctx, owner: owner(brand, session), input: body }),
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
      async ({ brand, session }) => ({ rows: await myFollowers({ ctx, owner: owner(brand, session) }) }),
      {
        auth: CUSTOMER,
        response: { 200: t.Object({ rows: t.Array(Follower) }) },
        detail: doc(TAG, "The customer's follower profiles"),
      },
    )
    .put(
      '/copytrade/follower/:login',
      ({ brand, session, params, body }) =>
        updateFollower({ ctx, owner: owner(brand, session), login: params.login, input: body }),
      {
        auth: CUSTOMER,
        ...textInput({ params: LoginParam }),
        body: FollowerSettingsBody,
        response: { 200: Follower, ...err('INVALID_ACCOUNT', 'FOLLOWER_NOT_FOUND', 'INVALID_TRANSITION') },
        detail: doc(TAG, "Change a follower's defaults", {
          description:
            'Merged onto the defaults as they are: a change another request commits at the same time is kept too (409 INVALID_TRANSITION "changed meanwhile; read it again" only when they keep changing under it).',
        }),
      },
    )
    .delete(
      '/copytrade/follower/:login',
      async ({ brand, session, params }) => {
        await deleteFollower({ ctx, owner: owner(brand, session), login: params.login })
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
