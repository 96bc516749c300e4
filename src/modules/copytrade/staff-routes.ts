import { Elysia, t } from 'elysia'
import { doc } from '../../kernel/http/openapi'
import { Id, Int, Login, Ok, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import type { CopyCtx } from './context'
import { err, IdParam, STAFF, STAFF_TAG } from './route-common'
import { Master, StaffSubscription } from './route-schemas'
import {
  staffDisableMaster,
  staffDisableSubscription,
  staffMasters,
  staffSubscriptions,
} from './service/staff'

/** Staff routes: list and disable masters and subscriptions. */
export const copyStaffRoutes = (ctx: CopyCtx) =>
  new Elysia({ name: 'copytrade-staff', seed: ctx.instanceId })
    .use(security(ctx))
    .get(
      '/manager/copytrade/masters',
      ({ brand, query }) => staffMasters({ ctx, brandId: brand.id, input: query }),
      {
        auth: STAFF,
        ...textInput({
          query: {
            enabled: t.Optional(Int({ minimum: 0, maximum: 1, description: '1 enabled, 0 disabled' })),
            customer_id: t.Optional(Id('customer id')),
            before: t.Optional(Int({ minimum: 1, description: 'next_before of the page before' })),
            limit: t.Optional(Int({ minimum: 1, maximum: 500, description: 'rows per page (default 100)' })),
          },
        }),
        response: { 200: t.Object({ rows: t.Array(Master), next_before: Int() }) },
        detail: doc(STAFF_TAG, 'Masters of the brand'),
      },
    )
    .post(
      '/manager/copytrade/masters/:id/disable',
      ({ brand, session, params, body }) =>
        staffDisableMaster({ ctx, brandId: brand.id, staffId: session.staffId!, id: params.id, input: body }),
      {
        auth: STAFF,
        // the example disables the master the create example made, not the demo's marketplace master
        ...textInput({ params: IdParam('master', 2) }),
        body: t.Object(
          {
            reason: t.String({ maxLength: 200, description: 'shown to the owner as blocked_reason' }),
            end_subscriptions: t.Optional(
              t.Boolean({ description: 'also disable its subscriptions (their copies close)' }),
            ),
          },
          { example: { reason: 'under review', end_subscriptions: false } },
        ),
        response: { 200: Master, ...err('MASTER_NOT_FOUND') },
        detail: doc(STAFF_TAG, 'Disable a master', {
          description:
            'It copies nothing new and its owner cannot enable it; closes of copied positions still copy.',
        }),
      },
    )
    .get(
      '/manager/copytrade/subscriptions',
      ({ brand, query }) => staffSubscriptions({ ctx, brandId: brand.id, input: query }),
      {
        auth: STAFF,
        ...textInput({
          query: {
            master_id: t.Optional(Id('master id')),
            follower_login: t.Optional(Login),
            status: t.Optional(
              Int({ minimum: 0, maximum: 2, description: '0 ACTIVE, 1 PAUSED, 2 DISABLED' }),
            ),
            before: t.Optional(Int({ minimum: 1, description: 'next_before of the page before' })),
            limit: t.Optional(Int({ minimum: 1, maximum: 500, description: 'rows per page (default 100)' })),
          },
        }),
        response: { 200: t.Object({ rows: t.Array(StaffSubscription), next_before: Int() }) },
        detail: doc(STAFF_TAG, 'Subscriptions of the brand'),
      },
    )
    .post(
      '/manager/copytrade/subscriptions/:id/disable',
      async ({ brand, session, params, body }) => {
        await staffDisableSubscription({
          ctx,
          brandId: brand.id,
          staffId: session.staffId!,
          id: params.id,
          input: body,
        })
        return { data: 'OK' as const }
      },
      {
        auth: STAFF,
        ...textInput({ params: IdParam('subscription') }),
        body: t.Object(
          { reason: t.String({ maxLength: 200, description: 'kept as the status reason' }) },
          { example: { reason: 'customer request' } },
        ),
        response: { 200: Ok, ...err('SUBSCRIPTION_NOT_FOUND', 'INVALID_TRANSITION') },
        detail: doc(STAFF_TAG, 'Disable a subscription (its copies are closed)'),
      },
    )
