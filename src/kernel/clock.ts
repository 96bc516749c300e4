/** Injected time source so tests move time instead of sleeping (DESIGN rule 8). */
export interface Clock {
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** A clock tests can set and advance. */
export class ManualClock implements Clock {
  constructor(private ms = Date.UTC(2026, 0, 5, 12, 0, 0)) {}
  now() {
    return this.ms
  }
  set(ms: number) {
    this.ms = ms
  }
  advance(ms: number) {
    this.ms += ms
  }
}

export const epochSeconds = (ms: number) => Math.floor(ms / 1000)
