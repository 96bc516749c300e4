/**
 * The one argument of a use case (a module's `service/<verb>.ts`, docs/architecture.md): `ctx`, the
 * module's services; `input`, what the caller asked (the validated body or query as the route received
 * it, or the domain values another module or a job passes); and the caller's scope named beside them
 * (the brand, the session or actor, the customer, the record the path names). A use case asked nothing
 * beyond its scope takes no `input`.
 *
 * ```ts
 * export async function setRisk({ ctx, brandId, customerId, input }: UseCase<Ctx, RiskInput, Scope>) {}
 * ```
 */
export type UseCase<Ctx, Input = undefined, Scope = unknown> = { ctx: Ctx } & ([Input] extends [undefined]
  ? { input?: undefined }
  : { input: Input }) &
  Scope
