import type { MarginSnapshot } from '../domain/margin'
import { fromMinor } from '../domain/money'
import { levelType } from './margin'
import type { AccountView } from './shared'

/** Spec 2.1 (GET /account/me). */
export function profileView(view: AccountView, m: MarginSnapshot) {
  const { account: a, group: g } = view
  return {
    id: a.login,
    login: a.login,
    currency: g.currency,
    group: g.name,
    comment: a.comment,
    avatar: a.avatar,
    email: a.email,
    name: a.name,
    phone: a.phone,
    address: a.address,
    city: a.city,
    state: a.state,
    country: a.country,
    zipcode: a.zipcode,
    user_color: a.userColor,
    enable: a.enable,
    enable_read_only: a.enableReadOnly,
    read_only_reason: a.readOnlyReason,
    enable_change_password: a.enableChangePassword,
    leverage: a.leverage,
    regdate: a.regdate,
    prevbalance: fromMinor(a.prevBalance, g.currency),
    prevmonthbalance: fromMinor(a.prevMonthBalance, g.currency),
    balance: m.balance,
    storage: m.storage,
    commission: m.commission,
    credit: m.credit,
    margin: m.margin,
    margin_free: m.margin_free,
    margin_level: m.margin_level,
    equity: m.equity,
  }
}

/** Spec 2.3 (GET /balance/me). */
export function balanceView(view: AccountView, m: MarginSnapshot) {
  return {
    balance: m.balance,
    credit: m.credit,
    profit: m.floatingProfit,
    commission: m.commission,
    storage: m.storage,
    margin: m.margin,
    margin_free: m.margin_free,
    margin_level: m.margin_level,
    equity: m.equity,
    level_type: levelType(m, view.group),
    leverage: view.account.leverage,
  }
}
