import { timingSafeEqual } from 'node:crypto'
import { and, desc, eq, isNull, lt } from 'drizzle-orm'
import { Elysia, t } from 'elysia'
import { STAFF_SESSIONS } from '../auth/session'
import { deadLetters, eventDeliveries, outbox } from '../events/schema'
import type { JobRunner } from '../jobs/runner'
import type { Kernel } from '../kernel'
import { ApiError } from './errors'
import { doc, errors } from './openapi'
import { Id, IdPageQuery, Int, idPage, jsonOrText, nameModels, textInput } from './schemas'
import { security } from './security'

function secretMatches(expected: string | undefined, given: string | null) {
  if (!expected || !given) return false
  const a = Buffer.from(expected)
  const b = Buffer.from(given)
  return a.length === b.length && timingSafeEqual(a, b)
}

const DeadLetter = t.Object({
  id: Int(),
  event_id: Int(),
  consumer: t.String(),
  topic: t.String(),
  payload: t.Unknown({
    description: 'the event payload; its text as a string when it is not JSON (often why it was parked)',
  }),
  error: t.String({ description: 'the last error of the consumer' }),
  attempts: Int(),
  failed_time: Int({ description: 'epoch seconds' }),
  retried_time: Int({ description: 'epoch seconds; 0 while parked' }),
})

/** Routes of the kernel itself: the cron route for external schedulers, and the dead letters for staff. */
export const kernelRoutes = (k: Kernel, runner: JobRunner) =>
  new Elysia({ name: 'kernel-routes', seed: k.instanceId })
    .use(security(k))
    .post(
      '/cron/:job',
      async ({ params, request }) => {
        if (!secretMatches(k.config.cronSecret, request.headers.get('x-cron-secret')))
          throw new ApiError(401, 'UNAUTHORIZED', 'a valid X-Cron-Secret is required (CRON_SECRET)')
        const outcome = await runner.runOnce(params.job)
        if (!outcome.ran && outcome.reason === 'unknown')
          throw new ApiError(404, 'JOB_NOT_FOUND', `no job ${params.job} (${runner.names.join(', ')})`)
        if (!outcome.ran)
          throw new ApiError(409, 'JOB_BUSY', `job ${params.job} runs elsewhere or already here`)
        return { job: params.job, ran: true, ms: outcome.ms }
      },
      {
        ...textInput({
          params: {
            job: t.String({
              pattern: '^[a-z0-9.-]{1,64}$',
              description: 'job name',
              example: 'events.relay',
            }),
          },
        }),
        response: {
          200: t.Object({ job: t.String(), ran: t.Literal(true), ms: Int({ description: 'duration' }) }),
          ...errors({ 401: ['UNAUTHORIZED'], 404: ['JOB_NOT_FOUND'], 409: ['JOB_BUSY'] }),
        },
        detail: {
          ...doc('System', 'Run a job now (external schedulers)', {
            description:
              'For a scheduler outside the service (cron, a Workers trigger): header X-Cron-Secret carries CRON_SECRET. ' +
              'A cluster job runs only where its lease can be taken (409 JOB_BUSY while another instance holds it). ' +
              'The jobs of a deployment depend on its configuration: 404 JOB_NOT_FOUND lists them (README, modules).',
          }),
          security: [{ CronSecret: [] }],
        },
      },
    )
    .get(
      '/manager/events/dead-letters',
      async ({ brand, query }) => {
        const rows = await k.db
          .select()
          .from(deadLetters)
          .where(
            and(
              eq(deadLetters.brandId, brand.id),
              query.cursor ? lt(deadLetters.id, query.cursor) : undefined,
            ),
          )
          .orderBy(desc(deadLetters.id))
          .limit((query.limit ?? 100) + 1)
        const { page, next_cursor } = idPage(rows, query.limit ?? 100)
        return {
          rows: page.map((r) => ({
            id: r.id,
            event_id: r.eventId,
            consumer: r.consumer,
            topic: r.topic,
            // a parked payload that does not parse (often why it was parked) is shown as its text
            payload: jsonOrText(r.payload),
            error: r.error,
            attempts: r.attempts,
            failed_time: Math.floor(r.failedAt / 1000),
            retried_time: r.retriedAt ? Math.floor(r.retriedAt / 1000) : 0,
          })),
          next_cursor,
        }
      },
      {
        auth: { roles: STAFF_SESSIONS },
        ...textInput({ query: IdPageQuery }),
        response: {
          200: t.Object({ rows: t.Array(DeadLetter), next_cursor: t.Union([Int(), t.Null()]) }),
          ...errors(),
        },
        detail: doc('System', 'Events a consumer kept failing on (dead letters), newest first'),
      },
    )
    .post(
      '/manager/events/dead-letters/:id/retry',
      async ({ brand, params }) => {
        const now = k.clock.now()
        const retried = await k.db.transaction(async (tx) => {
          const [dl] = await tx
            .update(deadLetters)
            .set({ retriedAt: now })
            .where(
              and(
                eq(deadLetters.id, params.id),
                eq(deadLetters.brandId, brand.id),
                isNull(deadLetters.retriedAt),
              ),
            )
            .returning()
          if (!dl) {
            const [seen] = await tx
              .select({ retriedAt: deadLetters.retriedAt })
              .from(deadLetters)
              .where(and(eq(deadLetters.id, params.id), eq(deadLetters.brandId, brand.id)))
            if (seen)
              throw new ApiError(409, 'ALREADY_RETRIED', `dead letter ${params.id} was sent back already`)
            throw new ApiError(404, 'DEAD_LETTER_NOT_FOUND', `dead letter ${params.id} not found`)
          }
          const [back] = await tx
            .update(outbox)
            .set({ dispatchedAt: null, attempts: 0, nextAt: now, leaseOwner: null, leaseUntil: null })
            .where(eq(outbox.id, dl.eventId))
            .returning({ id: outbox.id })
          if (!back)
            throw new ApiError(409, 'EVENT_EXPIRED', 'the event is no longer in the outbox (retention)')
          await tx
            .delete(eventDeliveries)
            .where(
              and(
                eq(eventDeliveries.eventId, dl.eventId),
                eq(eventDeliveries.consumer, dl.consumer),
                eq(eventDeliveries.status, 'dead'),
              ),
            )
          return dl
        })
        k.events.wake()
        return { data: 'OK' as const, event_id: retried.eventId, consumer: retried.consumer }
      },
      {
        auth: { roles: ['SESSION_ADMIN'] },
        ...textInput({ params: { id: Id('dead letter id') } }),
        response: {
          200: t.Object({ data: t.Literal('OK'), event_id: Int(), consumer: t.String() }),
          ...errors({ 404: ['DEAD_LETTER_NOT_FOUND'], 409: ['ALREADY_RETRIED', 'EVENT_EXPIRED'] }),
        },
        detail: doc('System', 'Send a dead letter back to its consumer (admin)', {
          description:
            'The relay delivers the event again to that consumer only; the others already had it. Once per dead ' +
            'letter (409 ALREADY_RETRIED after); should it fail again, it comes back as a new dead letter.',
        }),
      },
    )

nameModels({ DeadLetter })
