import { expect, test } from 'bun:test'
import {
  checkPassword,
  dummyHash,
  hashGeneratedSecret,
  hashPassword,
  needsRehash,
  PASSWORD_PARAMS,
  type PasswordEngine,
  PHC,
  portableHash,
  portableVerify,
  rehashPassword,
  usePasswordEngine,
  verifyPassword,
} from '../../src/kernel/auth/passwords'
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

// probe auth2: passwords are hashed and checked in Unicode NFKC; a hash of a text as typed before that
// still verifies (and is due for a rehash)
test('checkPassword: NFC and NFD of one password match; a hash of the raw text verifies and asks for a rehash', async () => {
  const nfc = 'Passw\u00f6rd-1'
  const nfd = nfc.normalize('NFD')
  const h = await hashPassword(nfd)
  expect(await Bun.password.verify(nfc, h)).toBe(true)
  expect(await checkPassword(nfc, h)).toEqual({ ok: true, rehash: false })
  expect(await checkPassword(nfd, h)).toEqual({ ok: true, rehash: false })
  expect(await checkPassword(`\uff30${nfc.slice(1)}`, h)).toEqual({ ok: true, rehash: false })
  expect(await verifyPassword('Passw\u00f6rd-2', h)).toBe(false)
  const legacy = await Bun.password.hash(nfd, { algorithm: 'argon2id', memoryCost: 19456, timeCost: 2 })
  expect(await checkPassword(nfd, legacy)).toEqual({ ok: true, rehash: true })
  // the NFC form is another text for a hash of the NFD one: the owner types it as before
  expect(await checkPassword(nfc, legacy)).toEqual({ ok: false, rehash: false })
  expect(await Bun.password.verify(nfc, await rehashPassword(nfd))).toBe(true)
}, 60_000)

test('hashPassword: a text normalizing changes is held to 6..64 characters once normalized; others as before', async () => {
  await expect(hashPassword('abcde\u0301', 'new_password')).rejects.toThrow(
    /new_password: 6\.\.64 characters/,
  )
  // NFKC-stable: the route's rule was checked on this very text (a test's or a demo's is not refused)
  expect(await hashPassword('ab😀😀')).toStartWith('$argon2id$v=19$m=19456,t=2,p=1$')
  expect(await hashPassword('abcdef\u0301')).toStartWith('$argon2id$')
}, 60_000)

test('a refused check of a generated secret also checks the dummy hash (the full cost); a match stays cheap', async () => {
  const bun = Bun.password
  const seen: string[] = []
  const delegate: PasswordEngine = {
    hash: (plain, params = PASSWORD_PARAMS) =>
      bun.hash(plain, { algorithm: 'argon2id', memoryCost: params.m, timeCost: params.t }),
    verify: (plain, hash) => (PHC.test(hash) ? bun.verify(plain, hash) : Promise.resolve(false)),
  }
  const dummy = await dummyHash()
  usePasswordEngine({
    hash: delegate.hash,
    verify: (plain, hash) => {
      seen.push(hash)
      return delegate.verify(plain, hash)
    },
  })
  try {
    const generated = await hashGeneratedSecret('Gen3rated-Secret-xyz')
    expect(generated).toStartWith('$argon2id$v=19$m=1024,t=1,p=1$')
    expect(await verifyPassword('Gen3rated-Secret-xyz', generated)).toBe(true)
    expect(seen).toEqual([generated])
    seen.length = 0
    expect(await verifyPassword('wrong-secret', generated)).toBe(false)
    expect(seen).toEqual([generated, dummy])
    seen.length = 0
    // a stored value that is no hash is refused at the full cost too; a full-cost hash once
    expect(await verifyPassword('wrong-secret', 'not-a-hash')).toBe(false)
    expect(seen).toEqual(['not-a-hash', dummy])
    seen.length = 0
    const full = await hashPassword('demo-pass-1')
    expect(await verifyPassword('wrong-secret', full)).toBe(false)
    expect(seen).toEqual([full])
  } finally {
    usePasswordEngine(delegate)
  }
}, 60_000)
