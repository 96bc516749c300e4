import { argon2dAsync, argon2iAsync, argon2idAsync } from '@noble/hashes/argon2.js'

/**
 * Passwords as argon2id PHC strings (`$argon2id$v=19$m=65536,t=2,p=1$salt$hash`), the same on every
 * runtime: Bun hashes and verifies natively (Bun.password); elsewhere (Workers) the audited pure-JS
 * argon2 of @noble/hashes reads and writes the same strings, so a hash made by either verifies on both.
 */
const native = (globalThis as { Bun?: { password: BunPassword } }).Bun?.password

interface BunPassword {
  hash(plain: string, opts: { algorithm: 'argon2id' }): Promise<string>
  verify(plain: string, hash: string): Promise<boolean>
}

/** Bun.password's argon2id defaults (64 MiB, 2 passes, 1 lane), so both runtimes write the same cost. */
const PARAMS = { m: 65536, t: 2, p: 1 }

export const hashPassword = (plain: string) =>
  native ? native.hash(plain, { algorithm: 'argon2id' }) : portableHash(plain)

export const verifyPassword = (plain: string, hash: string) =>
  native ? native.verify(plain, hash) : portableVerify(plain, hash)

const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replace(/=+$/, '')
const unb64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0))
const utf8 = (s: string) => new TextEncoder().encode(s)

export async function portableHash(plain: string) {
  const salt = crypto.getRandomValues(new Uint8Array(16))
  const out = await argon2idAsync(utf8(plain), salt, { ...PARAMS, dkLen: 32 })
  return `$argon2id$v=19$m=${PARAMS.m},t=${PARAMS.t},p=${PARAMS.p}$${b64(salt)}$${b64(out)}`
}

const PHC =
  /^\$(argon2id|argon2i|argon2d)\$v=(\d+)\$m=(\d+),t=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/
const KDF = { argon2id: argon2idAsync, argon2i: argon2iAsync, argon2d: argon2dAsync }

/** False for anything that is not an argon2 PHC string (never throws on a stored value). */
export async function portableVerify(plain: string, hash: string): Promise<boolean> {
  const m = PHC.exec(hash)
  if (!m) return false
  const [, kind, version, mem, time, lanes, salt, expected] = m
  const want = unb64(expected)
  const got = await KDF[kind as keyof typeof KDF](utf8(plain), unb64(salt), {
    m: Number(mem),
    t: Number(time),
    p: Number(lanes),
    version: Number(version),
    dkLen: want.length,
  })
  // constant time: every byte is compared whatever the first difference
  let diff = got.length ^ want.length
  for (let i = 0; i < want.length; i++) diff |= got[i] ^ want[i]
  return diff === 0
}

/** A fixed hash to verify against when the user does not exist, so timing does not reveal existence. */
let dummy: Promise<string> | undefined
export const dummyHash = () => {
  dummy ??= hashPassword('not-a-real-password')
  return dummy
}
