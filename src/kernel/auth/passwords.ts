import { argon2dAsync, argon2iAsync, argon2idAsync } from '@noble/hashes/argon2.js'
import { codeRefusals } from '../refusal'
import { WorkGate } from '../work-gate'

/**
 * Passwords as argon2id PHC strings (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`), the same on every
 * runtime: Bun hashes and verifies natively (Bun.password); the Workers entry installs the WebAssembly
 * argon2 (passwords-wasm.ts); anywhere else the audited pure-JS argon2 of @noble/hashes. A hash made by
 * any of them verifies on all, whatever parameters it carries (old hashes of 64 MiB included).
 */
const native = (globalThis as { Bun?: { password: BunPassword } }).Bun?.password

interface BunPassword {
  hash(plain: string, opts: { algorithm: 'argon2id'; memoryCost: number; timeCost: number }): Promise<string>
  verify(plain: string, hash: string): Promise<boolean>
}

/**
 * OWASP's first argon2id configuration (19 MiB, 2 passes, 1 lane): on every runtime, so a hash costs the
 * same wherever it is checked. 64 MiB (Bun's default, used before) cost ~1 s of CPU and 65 MB a sign-in
 * in a Worker isolate of 128 MB; hashes with other parameters are rehashed at the next sign-in.
 */
export const PASSWORD_PARAMS = { m: 19456, t: 2, p: 1 } as const

type PasswordParams = { m: number; t: number; p: number }

/**
 * For secrets the server generates (≥ 80 bits of entropy, shown once): guessing them is hopeless
 * whatever the cost, so 1 MiB and one pass (~1 ms, where PASSWORD_PARAMS cost 85 ms a prop purchase).
 * The account must replace it (must_change_password) with a password of its own, hashed at full cost.
 */
const GENERATED_SECRET_PARAMS: PasswordParams = { m: 1024, t: 1, p: 1 }

export interface PasswordEngine {
  hash(plain: string, params?: PasswordParams): Promise<string>
  verify(plain: string, hash: string): Promise<boolean>
}

const nativeEngine = (bun: BunPassword): PasswordEngine => ({
  hash: (plain, params = PASSWORD_PARAMS) =>
    bun.hash(plain, { algorithm: 'argon2id', memoryCost: params.m, timeCost: params.t }),
  // Bun.password throws on a string that is not a hash; a stored value must never fail a sign-in
  verify: (plain, hash) => (PHC.test(hash) ? bun.verify(plain, hash) : Promise.resolve(false)),
})

/** One portable computation at a time: each holds its memory cost, and an isolate has 128 MB. */
let queue: Promise<unknown> = Promise.resolve()
const oneAtATime = <T>(run: () => Promise<T>): Promise<T> => {
  const next = queue.then(run, run)
  queue = next.catch(() => {})
  return next
}

const portableEngine: PasswordEngine = {
  hash: (plain, params) => oneAtATime(() => portableHash(plain, params)),
  verify: (plain, hash) => oneAtATime(() => portableVerify(plain, hash)),
}

let engine: PasswordEngine = native ? nativeEngine(native) : portableEngine

/** A runtime without Bun installs a faster engine (the Workers entry: WebAssembly). */
export function usePasswordEngine(e: PasswordEngine) {
  engine = e
}

/**
 * Every password hash and check of this process goes through one gate (kernel/work-gate): at most half
 * the processors at a time by default (at least one), and one that would wait over 2 s is refused (503,
 * Retry-After). A check costs tens of milliseconds of a processor by design (55 ms on a 2-core test
 * host); a burst of sign-ins, or a credential-stuffing flood from many addresses (the per-address lock
 * does not see it), would otherwise queue without bound and take the processors from trading
 * (docs/adr/0026).
 */
const halfTheProcessors = () => Math.max(1, Math.floor((globalThis.navigator?.hardwareConcurrency ?? 1) / 2))
const gate = new WorkGate('password check', halfTheProcessors(), 2000)

/** PASSWORD_WORK_CONCURRENCY (0: half the processors) and PASSWORD_WORK_MAX_WAIT_MS. */
export function configurePasswordWork(o: { concurrency: number; maxWaitMs: number }) {
  gate.configure(o.concurrency || halfTheProcessors(), o.maxWaitMs)
}

/**
 * Passwords are hashed and checked in Unicode NFKC (NIST SP 800-63B 5.1.1.2): "ö" typed precomposed
 * (NFC, most keyboards) or as o + U+0308 (NFD, macOS text, some mobile keyboards), or a full-width
 * letter, is the same password.
 */
const normal = (plain: string) => plain.normalize('NFKC')

/** The length rule of a password set (spec part 8, kernel/http/schemas PasswordText), in characters. */
const PASSWORD_CHARS = { min: 6, max: 64 } as const
const PASSWORDS = codeRefusals({ INVALID_DATA: 400 })

/**
 * A new password (not a generated secret), hashed in NFKC at PASSWORD_PARAMS. The route checked its length
 * rule on the text as typed; where normalizing changes the text, the rule must hold for what is hashed
 * too: `abcde` + U+0301 is 6 characters typed but `abcdé`, 5, once normalized (and a sign-in typing it
 * precomposed is refused as too short), so it is refused, 400 INVALID_DATA naming `field`. A text that
 * normalizing leaves as it is was checked by the route already (and kernel code hashing a fixed one, a
 * demo's or a test's, is not held to the rule here).
 */
export const hashPassword = (plain: string, field = 'password') => {
  const text = normal(plain)
  const chars = [...text].length
  if (text !== plain && (chars < PASSWORD_CHARS.min || chars > PASSWORD_CHARS.max))
    return Promise.reject(
      PASSWORDS.refuse(
        'INVALID_DATA',
        `${field}: ${PASSWORD_CHARS.min}..${PASSWORD_CHARS.max} characters once Unicode-normalized (NFKC), ${chars} here`,
      ),
    )
  return gate.run(() => engine.hash(text))
}

/**
 * A password a check has just proved, hashed again at today's parameters (an older hash, or one of its
 * text as typed before passwords were normalized): in NFKC, without the length rule, which it met when
 * it was set.
 */
export const rehashPassword = (plain: string) => gate.run(() => engine.hash(normal(plain)))

/**
 * A generated high-entropy secret (GENERATED_SECRET_PARAMS): verified like any password. Its hash costs
 * about a millisecond, so it does not take a turn at the gate (nor lower the mean the gate's waits are
 * estimated from).
 */
export const hashGeneratedSecret = (plain: string) => engine.hash(normal(plain), GENERATED_SECRET_PARAMS)

/**
 * Whether a check against this stored value costs less than one at PASSWORD_PARAMS: a generated secret's
 * hash (GENERATED_SECRET_PARAMS), or a value that is not a hash at all (refused at once).
 */
function belowFullCost(hash: string) {
  const m = PHC.exec(hash)
  if (!m) return true
  return Number(m[3]) * Number(m[4]) < PASSWORD_PARAMS.m * PASSWORD_PARAMS.t
}

/**
 * One check of a text against a stored hash, one turn at the gate. A refusal costs the full price
 * whatever the hash: one on a cheaper hash (a generated password still in force) is followed by a check
 * against the dummy hash, so the time of a wrong password does not tell such an account from a login
 * that does not exist (checked against the dummy hash) or an ordinary one. A match may stay cheap.
 */
const checkOnce = (text: string, hash: string) =>
  gate.run(async () => {
    const ok = await engine.verify(text, hash)
    if (!ok && belowFullCost(hash)) await engine.verify(text, await dummyHash())
    return ok
  })

/**
 * Checks a password against a stored hash: its NFKC form, and, when that fails and the text as typed is
 * not in NFKC, the text as typed once more (a hash set before passwords were normalized). `rehash`: the
 * password matched and its hash should be replaced by rehashPassword's (older parameters, or a hash of
 * the text as typed).
 */
export async function checkPassword(plain: string, hash: string): Promise<{ ok: boolean; rehash: boolean }> {
  const text = normal(plain)
  if (await checkOnce(text, hash)) return { ok: true, rehash: needsRehash(hash) }
  if (text !== plain && (await checkOnce(plain, hash))) return { ok: true, rehash: true }
  return { ok: false, rehash: false }
}

export const verifyPassword = async (plain: string, hash: string) => (await checkPassword(plain, hash)).ok

/** True when a stored hash was made with other parameters (or another variant) than PASSWORD_PARAMS. */
export function needsRehash(hash: string): boolean {
  const m = PHC.exec(hash)
  if (!m) return false
  const [, kind, , mem, time, lanes] = m
  const p = PASSWORD_PARAMS
  return kind !== 'argon2id' || Number(mem) !== p.m || Number(time) !== p.t || Number(lanes) !== p.p
}

const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replace(/=+$/, '')
const unb64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0))
const utf8 = (s: string) => new TextEncoder().encode(s)

export async function portableHash(plain: string, params: PasswordParams = PASSWORD_PARAMS) {
  const salt = crypto.getRandomValues(new Uint8Array(16))
  const { m, t, p } = params
  const out = await argon2idAsync(utf8(plain), salt, { m, t, p, dkLen: 32 })
  return `$argon2id$v=19$m=${m},t=${t},p=${p}$${b64(salt)}$${b64(out)}`
}

export const PHC =
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

/**
 * A fixed hash to verify against when the user does not exist, so timing does not reveal existence: made
 * once a process, outside the gate (a refusal must not stay cached as the process's answer). Kept as the
 * value, never the promise of it (kernel/single-flight: a Worker's requests cannot share one); two first
 * callers at once each make one.
 */
let dummy: string | undefined
export const dummyHash = async () => {
  // of a random secret nobody knows: a caller that took a match against it for a real one would let in
  // no password (the affiliate cabinet did, for an access without a password)
  dummy ??= await engine.hash(`${crypto.randomUUID()}${crypto.randomUUID()}`)
  return dummy
}
