import { z } from 'zod'
import type { MessageBus } from '../../kernel/bus/bus'
import { defineChannel, publishChange } from '../../kernel/bus/channel'
import type { Consumer } from '../../kernel/events/topic'
import type { Logger } from '../../kernel/logger'
import { AccountUpdated, BalanceOperation, GroupUpdated } from '../accounts'

/** Bus entries naming logins whose balance, credit or settings changed without an order change. */
export const ACCOUNTS_CHANGED = defineChannel('trading.accounts-changed', z.array(z.number().int()))

/** Bus entries naming groups whose margin call or stop-out level changed: the engine finds their logins. */
export const GROUPS_CHANGED = defineChannel('trading.groups-changed', z.array(z.number().int()))

/**
 * A balance or credit operation, or a change of leverage or group, moves an account's margin level (and a
 * watcher's equity) without a tick: the engine is told to look at the account again. After the delivery
 * commits: in one process the bus hands the entry to the engine at once, and the engine's writes would
 * wait for the delivery's transaction. A publish the bus refuses is sent again once it answers
 * (publishChange's backlog): nothing else would tell the engine (its resync reads orders, not accounts).
 */
export function accountChangeConsumers(bus: MessageBus, logger: Logger): Consumer<{ login: number }>[] {
  const tell = (name: string, topic: Consumer<{ login: number }>['topic']): Consumer<{ login: number }> => ({
    name: `trading.${name}`,
    topic,
    async after(event) {
      await publishChange(bus, logger, ACCOUNTS_CHANGED, [event.payload.login])
    },
  })
  return [tell('balance-operation', BalanceOperation), tell('account-updated', AccountUpdated)]
}

/**
 * New margin call or stop-out levels of a group move none of its accounts' figures but the limits they are
 * held to: the engine is told the group (one id, however many accounts it holds) and looks again at each
 * of its logins with positions, after the delivery commits.
 */
export function groupChangeConsumer(
  bus: MessageBus,
  logger: Logger,
): Consumer<{ group_id: number; changes: Record<string, unknown> }> {
  return {
    name: 'trading.group-updated',
    topic: GroupUpdated,
    accepts: (e) => e.payload.changes.margin_call !== undefined || e.payload.changes.stop_out !== undefined,
    async after(event) {
      await publishChange(bus, logger, GROUPS_CHANGED, [event.payload.group_id])
    },
  }
}
