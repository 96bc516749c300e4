/** The leverage steps trading platforms offer (1:1 .. 1:1000). */
const LEVERAGE_STEPS = [1, 2, 5, 10, 20, 25, 30, 33, 50, 66, 100, 200, 300, 400, 500, 1000] as const

/**
 * What a customer may choose for a new account of a group: the standard steps up to the group's
 * leverage, and the group's leverage itself. Higher leverage is a staff decision (per account).
 */
export function leverageOptions(groupLeverage: number): number[] {
  const steps: number[] = LEVERAGE_STEPS.filter((l) => l <= groupLeverage)
  if (!steps.includes(groupLeverage)) steps.push(groupLeverage)
  return steps.sort((a, b) => a - b)
}
