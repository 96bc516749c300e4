import { refusals } from '../../kernel/refusal'

/**
 * What trading refuses, by kind, and how each is answered (spec 7.x's codes with the statuses the spec
 * gives them: one code may mean several kinds, as MODIFY_TRADE_ERROR for an order that is not found and
 * one of another user). Services throw a kind; the HTTP edge and the routes' document read this table.
 */
export const TRADING = refusals({
  accountNotFound: { status: 403, code: 'USER_NOT_FOUND' },
  priceStale: { status: 503, code: 'PRICE_STALE' },
  manualTradingDisabled: { status: 403, code: 'MANUAL_TRADING_DISABLED' },
  openRefused: { status: 500, code: 'OPEN_ORDER_ERROR' },
  keyReused: { status: 409, code: 'IDEMPOTENCY_KEY_REUSED' },
  parentClosed: { status: 409, code: 'PARENT_CLOSED' },
  /** Write port only: the caller no longer wants the order (OpenInput.whileWanted). */
  notWanted: { status: 409, code: 'NO_LONGER_WANTED' },
  modifyNotFound: { status: 404, code: 'MODIFY_TRADE_ERROR' },
  modifyNotYours: { status: 403, code: 'MODIFY_TRADE_ERROR' },
  /** The account is disabled or read-only. */
  modifyForbidden: { status: 403, code: 'MODIFY_TRADE_ERROR' },
  stopsRefused: { status: 500, code: 'INCORRECT_SL_TP' },
  closeRefused: { status: 500, code: 'TRADE_ERROR' },
  positionNotFound: { status: 404, code: 'TRADE_ERROR' },
  cancelRefused: { status: 401, code: 'CANCEL_PENDING_TRADE_ERROR' },
})

export const refuse = TRADING.refuse
