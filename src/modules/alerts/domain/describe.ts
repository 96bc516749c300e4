import { CONDITION_NAMES } from './conditions'

const CONDITION_WORDS: Record<string, string> = {
  PRICE_ABOVE: 'is at or above',
  PRICE_BELOW: 'is at or below',
  CROSS_UP: 'crossed up through',
  CROSS_DOWN: 'crossed down through',
  CROSS_ANY: 'crossed',
  CHANNEL_ENTER: 'entered the channel',
  CHANNEL_EXIT: 'left the channel',
  MOVE_UP_PERCENT: 'rose',
  MOVE_DOWN_PERCENT: 'fell',
  MOVE_UP_AMOUNT: 'rose',
  MOVE_DOWN_AMOUNT: 'fell',
}

export interface FiredAlert {
  symbol: string
  side: number
  condition: number
  target_price: number
  channel_low: number
  channel_high: number
  move_threshold: number
  reference_price: number
  message: string
  price: number
}

/** A firing in words a trader reads (the notification of `alert.fired`). */
export function describeFiring(a: FiredAlert) {
  const name = CONDITION_NAMES[a.condition]
  const sideName = a.side === 1 ? 'ask' : 'bid'
  let what: string
  if (name === 'CHANNEL_ENTER' || name === 'CHANNEL_EXIT')
    what = `${CONDITION_WORDS[name]} ${a.channel_low}–${a.channel_high}`
  else if (name.startsWith('MOVE_'))
    what = `${CONDITION_WORDS[name]} ${a.move_threshold}${name.endsWith('PERCENT') ? '%' : ''} from ${a.reference_price}`
  else what = `${CONDITION_WORDS[name]} ${a.target_price}`
  return {
    title: `${a.symbol} ${sideName} ${what}`,
    body: `${a.symbol} ${sideName} is ${a.price}: it ${what}.${a.message ? ` ${a.message}` : ''}`,
    conditionName: name,
  }
}
