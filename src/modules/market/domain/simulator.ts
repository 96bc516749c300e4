/** Deterministic pseudo-random numbers (mulberry32): the same seed gives the same price paths. */
export function rng(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Standard normal draws by Box-Muller over a uniform source. */
export function normal(uniform: () => number) {
  let spare: number | null = null
  return () => {
    if (spare !== null) {
      const s = spare
      spare = null
      return s
    }
    let u = 0
    while (u === 0) u = uniform()
    const v = uniform()
    const r = Math.sqrt(-2 * Math.log(u))
    spare = r * Math.sin(2 * Math.PI * v)
    return r * Math.cos(2 * Math.PI * v)
  }
}

const YEAR_SECONDS = 365 * 24 * 3600

/** One geometric Brownian motion step: S * exp(-sigma^2/2 dt + sigma sqrt(dt) Z), dt in seconds. */
export const gbmStep = (price: number, sigma: number, dtSeconds: number, z: number) => {
  const dt = dtSeconds / YEAR_SECONDS
  return price * Math.exp(-0.5 * sigma * sigma * dt + sigma * Math.sqrt(dt) * z)
}

/** Stable per-symbol seed derived from the global seed and the name. */
export function symbolSeed(seed: number, symbol: string) {
  let h = seed ^ 0x9e3779b9
  for (let i = 0; i < symbol.length; i++) h = Math.imul(h ^ symbol.charCodeAt(i), 0x01000193)
  return h >>> 0
}
