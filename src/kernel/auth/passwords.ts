/** argon2id through Bun.password; verification is constant-time inside Bun. */
export const hashPassword = (plain: string) => Bun.password.hash(plain, { algorithm: 'argon2id' })
export const verifyPassword = (plain: string, hash: string) => Bun.password.verify(plain, hash)

/** A fixed hash to verify against when the user does not exist, so timing does not reveal existence. */
let dummy: Promise<string> | undefined
export const dummyHash = () => {
  dummy ??= hashPassword('not-a-real-password')
  return dummy
}
