import { currencyDecimals, fromMinor } from '../accounts'
import { REWARD_NAMES, RewardPolicy } from './domain/rewards'
import { SubscriptionSettings } from './domain/settings'
import { statsView } from './domain/stats'
import { SUB_STATUS_NAMES } from './domain/status'
import type { copyMasters, copyRecords, copyRewards, copySubscriptions } from './schema'

type Master = typeof copyMasters.$inferSelect
const sec = (ms: number) => Math.floor(ms / 1000)

export const rewardPolicyOf = (m: Pick<Master, 'rewardType' | 'rewardParams'>) =>
  RewardPolicy.parse({ ...JSON.parse(m.rewardParams), reward_type: m.rewardType })

/** A master as the marketplace shows it to anyone of the brand. */
export function publicMasterView(m: Master) {
  return {
    id: m.id,
    name: m.name,
    description: m.description,
    currency: m.currency,
    allowed_follower_modes: m.allowedFollowerModes,
    show_trade_history: m.showTradeHistory,
    show_followers: m.showFollowers,
    manual_trading_mode: m.manualTradingMode,
    reward_policy: { ...rewardPolicyOf(m), reward_name: REWARD_NAMES[m.rewardType]! },
    policy_version: m.policyVersion,
    followers: m.followers,
    copied_volume: m.copiedVolume,
    stats: statsView(m, currencyDecimals(m.currency)),
    created_time: sec(m.createdAt),
  }
}

/** A master as its owner (and staff) see it: the accounts and flags too. */
export function masterView(m: Master) {
  return {
    ...publicMasterView(m),
    login: m.login,
    payout_login: m.payoutLogin,
    enabled: m.enabled,
    public: m.public,
    blocked_reason: m.blockedReason,
    customer_id: m.customerId,
    updated_time: sec(m.updatedAt),
  }
}

/**
 * A subscription with the terms its follower accepted (the reward policy it pays on) and whether the
 * master offers newer ones (`terms_pending`: accept them with POST /copytrade/subscription/{id}/terms).
 */
export function subscriptionView(
  s: typeof copySubscriptions.$inferSelect,
  currency: string,
  master?: Pick<Master, 'policyVersion'>,
) {
  return {
    id: s.id,
    follower_login: s.followerLogin,
    master_id: s.masterId,
    status: s.status,
    status_name: SUB_STATUS_NAMES[s.status]!,
    status_reason: s.statusReason,
    ...SubscriptionSettings.parse(JSON.parse(s.settings)),
    start_balance: fromMinor(s.startBalanceMinor, currency),
    copied_result: fromMinor(s.resultMinor, currency),
    terms: {
      ...rewardPolicyOf(s),
      reward_name: REWARD_NAMES[s.rewardType]!,
      version: s.termsVersion,
      manual_trading_mode: s.manualTradingMode,
    },
    terms_pending: master ? master.policyVersion > s.termsVersion : false,
    currency,
    created_time: sec(s.createdAt),
    updated_time: sec(s.updatedAt),
  }
}

export function recordView(r: typeof copyRecords.$inferSelect, currency: string) {
  return {
    id: r.id,
    subscription_id: r.subscriptionId,
    action: r.action,
    result: r.result,
    reason: r.reason,
    message: r.message,
    symbol: r.symbol,
    master_ticket: r.masterTicket,
    master_price: r.masterPrice,
    master_time_ms: r.masterTime,
    decided_time_ms: r.decidedAt,
    follower_ticket: r.followerTicket ?? 0,
    follower_price: r.followerPrice ?? 0,
    follower_time_ms: r.followerTime ?? 0,
    volume: r.volume,
    slippage_points: r.slippagePoints ?? 0,
    slippage: r.slippageMinor === null ? 0 : fromMinor(r.slippageMinor, currency),
    currency,
  }
}

/**
 * A reward row. `payout_login` (the master's payout account) only when the follower's customer owns the
 * master too: a follower is not shown the accounts of another customer's master it pays.
 */
export function rewardView(r: typeof copyRewards.$inferSelect, o: { payoutLogin: boolean }) {
  return {
    id: r.id,
    subscription_id: r.subscriptionId,
    master_id: r.masterId,
    reward_type: r.rewardType,
    reward_name: REWARD_NAMES[r.rewardType]!,
    follower_login: r.followerLogin,
    ...(o.payoutLogin ? { payout_login: r.payoutLogin } : {}),
    base: r.base,
    amount: fromMinor(r.amountMinor, r.currency),
    currency: r.currency,
    payout_amount: r.payoutAmountMinor === null ? 0 : fromMinor(r.payoutAmountMinor, r.payoutCurrency),
    payout_currency: r.payoutCurrency,
    status: r.status,
    note: r.note,
    created_time: sec(r.createdAt),
    settled_time: r.settledAt ? sec(r.settledAt) : 0,
  }
}
