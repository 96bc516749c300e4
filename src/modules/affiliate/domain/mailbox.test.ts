import { expect, test } from 'bun:test'
import { mailboxOf } from './mailbox'

test('one mailbox: case, space, a +tag, and for Gmail its dots and googlemail.com', () => {
  expect(mailboxOf(' Partner@Example.com ')).toBe('partner@example.com')
  expect(mailboxOf('partner+self@example.com')).toBe('partner@example.com')
  expect(mailboxOf('p.a.r.t.n.e.r+x@GoogleMail.com')).toBe('partner@gmail.com')
  expect(mailboxOf('par.tner@gmail.com')).toBe('partner@gmail.com')
})

test('other mailboxes stay apart', () => {
  // dots count outside Gmail; a leading + is the local part itself
  expect(mailboxOf('par.tner@example.com')).not.toBe(mailboxOf('partner@example.com'))
  expect(mailboxOf('+partner@example.com')).toBe('+partner@example.com')
  expect(mailboxOf('partner@example.org')).not.toBe(mailboxOf('partner@example.com'))
  expect(mailboxOf('not-an-address')).toBe('not-an-address')
})
