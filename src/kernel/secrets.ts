/**
 * A rough strength of a secret in bits: its length times the Shannon entropy of its own characters.
 * Random hex of 64 characters scores about 250, random base64 of 44 about 220; a repeated word or a
 * short alphabet scores far lower. It cannot prove randomness; it refuses what is plainly not random.
 */
export function estimatedBits(secret: string): number {
  const chars = [...secret]
  if (chars.length === 0) return 0
  const counts = new Map<string, number>()
  for (const c of chars) counts.set(c, (counts.get(c) ?? 0) + 1)
  let perChar = 0
  for (const n of counts.values()) {
    const p = n / chars.length
    perChar -= p * Math.log2(p)
  }
  return perChar * chars.length
}
