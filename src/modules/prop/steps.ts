import type { AccountsApi } from '../accounts'
import type { PropApiData, PropCtx, PurchaseSteps, RecordStep } from './context'
import { propChallenges, propPhases } from './schema'

const op = (
  ctx: PropCtx,
  accounts: AccountsApi,
  o: {
    brandId: number
    login: number
    /** Integer minor units. */
    amountMinor: number
    data: PropApiData
    out: boolean
    comment: string
    key: string
    /** a rollback of an initial balance takes back what was given, whatever was traded since */
    allowNegative?: boolean
    keepFreeMargin?: boolean
    record?: RecordStep
  },
) =>
  ctx.uow.run(async (tx, work) => {
    const r = await accounts.postOperationTx(tx, work, {
      brandId: o.brandId,
      login: o.login,
      op: o.out ? 'OP_BALANCE_OUT' : 'OP_BALANCE_IN',
      amountMinor: o.amountMinor,
      reason: 'TR_REASON_PROP',
      comment: o.comment,
      apiData: { ...o.data },
      idempotencyKey: `prop:${o.data.purchase_id}:${o.key}`,
      createdBy: 'prop',
      allowNegative: o.allowNegative,
      keepFreeMargin: o.keepFreeMargin,
    })
    await o.record?.(tx, work, r.row.id)
    return r.row.id
  })

export function defaultSteps(ctx: PropCtx, accounts: AccountsApi): PurchaseSteps {
  return {
    takeFee: (brandId, login, amount, data, record) =>
      op(ctx, accounts, {
        record,
        keepFreeMargin: true,
        brandId,
        login,
        amountMinor: amount,
        data,
        out: true,
        comment: 'PROP_CHALLENGE_PURCHASE',
        key: 'fee',
      }),
    initialBalance: (brandId, login, amount, data, record) =>
      op(ctx, accounts, {
        record,
        brandId,
        login,
        amountMinor: amount,
        data,
        out: false,
        comment: 'PROP_CHALLENGE_INITIAL_BALANCE',
        key: `initial:${login}`,
      }),
    refundFee: (brandId, login, amount, data) =>
      op(ctx, accounts, {
        brandId,
        login,
        amountMinor: amount,
        data,
        out: false,
        comment: 'PROP_CHALLENGE_PURCHASE_ROLLBACK',
        key: 'fee-rollback',
      }),
    reverseInitialBalance: (brandId, login, amount, data) =>
      op(ctx, accounts, {
        brandId,
        login,
        amountMinor: amount,
        data,
        out: true,
        comment: 'PROP_CHALLENGE_INITIAL_BALANCE_ROLLBACK',
        key: `initial:${login}-rollback`,
        allowNegative: true,
      }),
    async openAccount({ brandId, customerId, group, password, maxPositions }, record) {
      const { account, group: g } = await accounts.openAccount({
        brandId,
        customerId,
        group,
        password,
        maxPositions,
        initialDeposit: false,
        generatedPassword: true,
        comment: 'prop challenge',
        createdBy: 'prop',
        within: record,
      })
      return {
        login: account.login,
        group: g.name,
        currency: g.currency,
        leverage: account.leverage,
        enable: account.enable,
        customer_id: customerId,
      }
    },
    createChallenge: (challenge, phase, record) =>
      ctx.uow.run(async (tx, work) => {
        const [c] = await tx.insert(propChallenges).values(challenge).returning({ id: propChallenges.id })
        await tx.insert(propPhases).values({ ...phase, challengeId: c!.id })
        await record(tx, work, c!.id)
        return c!.id
      }),
  }
}
