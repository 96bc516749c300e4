import { describe, expect, test } from 'bun:test'
import { signCheckout } from './checkout'
import { signSandbox, verifySandbox } from './sandbox'

describe('webhook signatures', () => {
  const body = '{"id":"evt_1"}'
  const now = 1_800_000_000_000
  test('sandbox: t and v1, 300 s tolerance, any secret of a rotation, exact body', () => {
    const h = signSandbox('secret-one-0123456789', body, now / 1000)
    expect(verifySandbox(h, body, ['secret-one-0123456789'], now)).toBe(true)
    expect(verifySandbox(h, body, ['other-secret-00000000', 'secret-one-0123456789'], now)).toBe(true)
    expect(verifySandbox(h, body, ['other-secret-00000000'], now)).toBe(false)
    expect(verifySandbox(h, `${body} `, ['secret-one-0123456789'], now)).toBe(false)
    expect(verifySandbox(h, body, ['secret-one-0123456789'], now + 301_000)).toBe(false)
    expect(verifySandbox(h, body, ['secret-one-0123456789'], now + 299_000)).toBe(true)
    expect(verifySandbox(null, body, ['secret-one-0123456789'], now)).toBe(false)
    expect(verifySandbox('t=abc,v1=00', body, ['secret-one-0123456789'], now)).toBe(false)
  })
  test('checkout: hex HMAC-SHA256 of the body (RFC 4231 case 2 key/message check)', () => {
    // HMAC-SHA256("Jefe", "what do ya want for nothing?")
    expect(signCheckout('Jefe', 'what do ya want for nothing?')).toBe(
      '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    )
  })
})
