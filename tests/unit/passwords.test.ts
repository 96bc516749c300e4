import { expect, test } from 'bun:test'
import { portableHash, portableVerify } from '../../src/kernel/auth/passwords'

// The Workers build verifies with the portable argon2 (no Bun there); Bun verifies natively. A hash made
// by either must verify on both, and existing Bun hashes keep working.
test('a Bun.password argon2id hash verifies with the portable code, and a portable hash with Bun', async () => {
  const bunHash = await Bun.password.hash('demo-pass-1', { algorithm: 'argon2id' })
  expect(await portableVerify('demo-pass-1', bunHash)).toBe(true)
  expect(await portableVerify('demo-pass-2', bunHash)).toBe(false)
  const edgeHash = await portableHash('demo-pass-1')
  expect(edgeHash).toStartWith('$argon2id$v=19$m=65536,t=2,p=1$')
  expect(await Bun.password.verify('demo-pass-1', edgeHash)).toBe(true)
  expect(await Bun.password.verify('demo-pass-2', edgeHash)).toBe(false)
}, 60_000)

test('anything but an argon2 PHC string is refused, not thrown on', async () => {
  for (const bad of ['', 'plain', '$2b$10$abcdefghijklmnopqrstuv', '$argon2id$v=19$m=8,t=1,p=1$$'])
    expect(await portableVerify('x', bad)).toBe(false)
})
