import Argon2, { Argon2Type } from '@phi-ag/argon2'
import { PASSWORD_PARAMS, type PasswordEngine, PHC } from './passwords'

/**
 * argon2 in WebAssembly (the reference C code, SIMD; @phi-ag/argon2) for runtimes without Bun.password:
 * ~20x faster than pure JavaScript. Workers refuse to compile WebAssembly from bytes at run time, so the
 * caller hands over the instance of a module its bundler imported. One instance, used synchronously, so
 * one hash at a time holds its memory.
 */
export function wasmPasswordEngine(instance: () => Promise<WebAssembly.Instance>): PasswordEngine {
  // the instance once made, never the promise of it: a Worker's requests cannot share a promise
  // (kernel/single-flight); two first sign-ins at once each make one, and one is kept
  let argon2: Argon2 | undefined
  const get = async () => {
    if (!argon2) {
      const made = new Argon2(await instance())
      argon2 ??= made
    }
    return argon2
  }
  return {
    async hash(plain, params = PASSWORD_PARAMS) {
      const { m, t, p } = params
      return (await get()).hash(plain, {
        type: Argon2Type.Argon2id,
        memoryCost: m,
        timeCost: t,
        parallelism: p,
        hashLength: 32,
      }).encoded
    },
    async verify(plain, hash) {
      if (!PHC.test(hash)) return false
      return (await get()).tryVerify(hash, plain).success
    },
  }
}
