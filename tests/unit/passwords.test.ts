import { expect, test } from 'bun:test'
import { needsRehash, PASSWORD_PARAMS, portableHash, portableVerify } from '../../src/kernel/auth/passwords'
import { wasmPasswordEngine } from '../../src/kernel/auth/passwords-wasm'

// The Workers build verifies with the portable argon2 (no Bun there); Bun verifies natively. A hash made
// by either must verify on both, and existing Bun hashes keep working.
test('a Bun.password argon2id hash verifies with the portable code, and a portable hash with Bun', async () => {
  const bunHash = await Bun.password.hash('demo-pass-1', { algorithm: 'argon2id' })
  expect(await portableVerify('demo-pass-1', bunHash)).toBe(true)
  expect(await portableVerify('demo-pass-2', bunHash)).toBe(false)
  const edgeHash = await portableHash('demo-pass-1')
  expect(edgeHash).toStartWith('$argon2id$v=19$m=19456,t=2,p=1$')
  expect(await Bun.password.verify('demo-pass-1', edgeHash)).toBe(true)
  expect(await Bun.password.verify('demo-pass-2', edgeHash)).toBe(false)
}, 60_000)

test('anything but an argon2 PHC string is refused, not thrown on', async () => {
  for (const bad of ['', 'plain', '$2b$10$abcdefghijklmnopqrstuv', '$argon2id$v=19$m=8,t=1,p=1$$'])
    expect(await portableVerify('x', bad)).toBe(false)
})

// The Workers entry's engine: the same module wrangler bundles, instantiated here from its bytes
const wasm = wasmPasswordEngine(async () => {
  const bytes = await Bun.file(Bun.resolveSync('@phi-ag/argon2/argon2.wasm', import.meta.dir)).arrayBuffer()
  return (await WebAssembly.instantiate(bytes)).instance
})

test("the WebAssembly engine writes OWASP parameters, and its hashes and Bun's verify on each other", async () => {
  const h = await wasm.hash('demo-pass-1')
  expect(h).toStartWith('$argon2id$v=19$m=19456,t=2,p=1$')
  expect(await Bun.password.verify('demo-pass-1', h)).toBe(true)
  expect(await portableVerify('demo-pass-1', h)).toBe(true)
  expect(await wasm.verify('demo-pass-2', h)).toBe(false)
  // an old 64 MiB hash of the Bun server still verifies at the edge, and is due for a rehash
  const old = await Bun.password.hash('demo-pass-1', {
    algorithm: 'argon2id',
    memoryCost: 65536,
    timeCost: 2,
  })
  expect(await wasm.verify('demo-pass-1', old)).toBe(true)
  expect(await wasm.verify('nope', old)).toBe(false)
  expect(needsRehash(old)).toBe(true)
  expect(needsRehash(h)).toBe(false)
  for (const bad of ['', 'plain', '$2b$10$abcdefghijklmnopqrstuv'])
    expect(await wasm.verify('x', bad)).toBe(false)
}, 60_000)

test("PASSWORD_PARAMS is the first argon2id line of OWASP's table (19 MiB, 2 passes, 1 lane)", () => {
  expect(PASSWORD_PARAMS).toEqual({ m: 19456, t: 2, p: 1 })
})
