import type { PayloadOf } from '../../kernel/events/topic'
import type { PropBreached, PropPhasePassed, PropWarning } from '../prop'
import type { NewNotification } from './service'

const RULES: Record<string, string> = {
  daily_loss: 'daily loss limit',
  total_loss: 'maximum loss limit',
  max_trading_days: 'time limit',
}

export function propBreach(brandId: number, b: PayloadOf<typeof PropBreached>): NewNotification {
  const rule = RULES[b.rule] ?? b.rule
  return {
    brandId,
    login: b.login,
    token: 'prop.breach',
    level: 'critical',
    title: `Challenge phase ${b.phase_index} failed: ${rule}`,
    body:
      b.rule === 'max_trading_days'
        ? `The phase reached its time limit of ${b.limit} days without its profit target. Trading is disabled on this account.`
        : `Equity ${b.observed.toFixed(2)} ${b.currency} reached the ${rule} (${b.limit.toFixed(2)} ${b.currency} from ${b.anchor.toFixed(2)}). Positions were closed and trading is disabled on this account.`,
    data: { ...b },
  }
}

export function propWarning(brandId: number, w: PayloadOf<typeof PropWarning>): NewNotification {
  return {
    brandId,
    login: w.login,
    token: 'prop.warning',
    level: 'warning',
    title: `${w.level}% of the ${RULES[w.rule] ?? w.rule} used`,
    body: `Phase ${w.phase_index} has used ${w.used_pct.toFixed(1)}% of its ${RULES[w.rule] ?? w.rule} today.`,
    data: { ...w },
  }
}

export function propPassed(brandId: number, p: PayloadOf<typeof PropPhasePassed>): NewNotification {
  return {
    brandId,
    login: p.login,
    token: 'prop.phase_passed',
    level: 'info',
    title: p.next_login === null ? 'Challenge passed' : `Phase ${p.phase_index} passed`,
    body:
      p.next_login === null
        ? 'You passed the challenge.'
        : `Phase ${p.phase_index} passed. ${p.funded ? 'Your funded account' : 'The next phase'} is account ${p.next_login}.`,
    data: { ...p },
  }
}
