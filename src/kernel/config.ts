import { z } from 'zod'
import { estimatedBits } from './secrets'

/** Development-only signing secret; production refuses to start with it or without its own JWT_SECRET. */
export const DEV_JWT_SECRET = 'dev-only-secret-change-me-0123456789abcdef'
/** Estimated bits (kernel/secrets) a production JWT_SECRET needs: 32 random bytes give ~200. */
const MIN_JWT_SECRET_BITS = 128
const MIN_FEED_TOKEN_BITS = 96

/** An on/off variable: 1, true, yes, on (or 0, false, no, off, empty). Modules read theirs with it too. */
export const envFlag = z
  .enum(['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off', ''])
  .transform((v) => ['1', 'true', 'yes', 'on'].includes(v))
const bool = envFlag

/**
 * The kernel's variables: what the kernel itself reads (HTTP, database, cache, tokens and sign-in guard,
 * body and upload limits, the file store, the jobs, the relay, the feed token's guard) and what the entries
 * decide per deployment shape (ROLE, GROUP_COMMIT: the Worker turns it off, SEED_DEMO). A module's own
 * variables live in its `config.ts` (README: configuration lists them all).
 */

const schema = z.object({
  APP_ENV: z.enum(['development', 'test', 'production']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  DATABASE_URL: z
    .string()
    .min(1)
    .regex(/^(file|libsql|wss?|https?):/, 'libSQL speaks file:, libsql:, ws(s): and http(s): URLs only')
    .default('file:data/app.db'),
  DATABASE_AUTH_TOKEN: z.string().optional(),
  DATABASE_CACHE_MB: z.coerce.number().int().min(2).max(4096).default(64),
  DATABASE_WRITE_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(8000),
  JWT_SECRET: z.string().optional(),
  JWT_ISSUER: z.string().min(1).default('trading-client-service'),
  JWT_AUDIENCE: z.string().min(1).default('trading-client-api'),
  TOKEN_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(30 * 86400)
    .default(12 * 3600),
  SESSION_COOKIE_NAME: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/)
    .default('tcs_token'),
  REDIS_URL: z.string().url().optional(),
  UPSTASH_REDIS_REST_URL: z.string().url().optional(),
  UPSTASH_REDIS_REST_TOKEN: z.string().optional(),
  CACHE_TIMEOUT_MS: z.coerce.number().int().min(10).max(10_000).default(250),
  TRUST_PROXY: bool.default(false),
  UPLOAD_DIR: z.string().default('data/uploads'),
  BODY_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  UPLOAD_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(10 * 1024 * 1024),
  SIGNIN_MAX_FAILURES: z.coerce.number().int().min(1).default(10),
  SIGNIN_MAX_FAILURES_PER_IP: z.coerce.number().int().min(1).default(20),
  SIGNIN_LOCK_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(15 * 60),
  PASSWORD_WORK_CONCURRENCY: z.coerce.number().int().min(0).max(256).default(0),
  PASSWORD_WORK_MAX_WAIT_MS: z.coerce.number().int().min(100).max(60_000).default(2000),
  SEED_DEMO: bool.optional(),
  FEED_TOKEN: z.string().min(24).optional(),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  CRON_SECRET: z.string().min(24).optional(),
  GROUP_COMMIT: bool.default(true),
  ROLE: z.enum(['all', 'api', 'engine']).default('all'),
  CLUSTER_JOBS: z.enum(['internal', 'external']).default('internal'),
  EVENTS_RETENTION_HOURS: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 365)
    .default(72),
})

/**
 * The rules of production, on the raw environment: checked beside the schema's own, so one start reports
 * every invalid setting at once (zod runs a refinement only once everything else parses).
 */
function productionIssues(env: Record<string, string | undefined>) {
  const issues: { path: string[]; message: string }[] = []
  if (env.APP_ENV !== 'production') return issues
  const issue = (path: string, message: string) => issues.push({ path: [path], message })
  const on = (v: string | undefined) => ['1', 'true', 'yes', 'on'].includes(v ?? '')
  if (!env.JWT_SECRET || new TextEncoder().encode(env.JWT_SECRET).length < 32)
    issue('JWT_SECRET', 'JWT_SECRET of at least 32 bytes is required in production')
  else if (env.JWT_SECRET.includes(DEV_JWT_SECRET))
    issue(
      'JWT_SECRET',
      'JWT_SECRET is the published development secret; generate one (openssl rand -base64 48)',
    )
  else if (estimatedBits(env.JWT_SECRET) < MIN_JWT_SECRET_BITS)
    issue('JWT_SECRET', 'JWT_SECRET is not random enough; generate one (openssl rand -base64 48)')
  if (env.CRON_SECRET && estimatedBits(env.CRON_SECRET) < MIN_FEED_TOKEN_BITS)
    issue('CRON_SECRET', 'CRON_SECRET is not random enough; generate one (openssl rand -hex 24)')
  if (env.FEED_TOKEN && estimatedBits(env.FEED_TOKEN) < MIN_FEED_TOKEN_BITS)
    issue('FEED_TOKEN', 'FEED_TOKEN is not random enough; generate one (openssl rand -hex 24)')
  if (on(env.SEED_DEMO)) issue('SEED_DEMO', 'demo data is never seeded in production')
  return issues
}

type Env = z.infer<typeof schema>

export interface Config {
  env: Env['APP_ENV']
  production: boolean
  port: number
  host: string
  /** writeTimeoutMs: how long a write may wait for the write lock, or a round trip of a remote database take. */
  database: { url: string; authToken?: string; cacheMb: number; writeTimeoutMs: number }
  jwt: { secret: string; issuer: string; audience: string; ttlSeconds: number; cookieName: string }
  cache: { kind: 'memory' } | { kind: 'redis'; url: string } | { kind: 'upstash'; url: string; token: string }
  cacheTimeoutMs: number
  trustProxy: boolean
  upload: { dir: string; maxBytes: number }
  /** JSON bodies: at most `maxBytes`; anything announced above `hardLimit` is refused before it is read. */
  body: { maxBytes: number; hardLimit: number }
  signin: { maxFailures: number; maxFailuresPerIp: number; lockSeconds: number }
  /** Password hashes and checks at once in this process (0: half the processors), and their longest wait. */
  passwordWork: { concurrency: number; maxWaitMs: number }
  seedDemo: boolean
  /** The token of the price feed guard (header X-Feed-Token); without it the guard refuses everything. */
  quotes: { feedToken?: string }
  logLevel: Env['LOG_LEVEL']
  /**
   * Writes committed in batches (ADR 0001: trade opens and closes, landing touches), or one transaction
   * each: the entries decide it per deployment shape (the Worker turns it off).
   */
  groupCommit: boolean
  /** `all`: API and a candidate for the engine role; `api`: never the engine; `engine`: the engine's standby too. */
  role: Env['ROLE']
  /** Shared secret of POST /cron/{job} (header X-Cron-Secret); the route refuses everything without it. */
  cronSecret?: string
  /**
   * `internal`: the process schedules every job; `external`: the jobs of the cluster (scope `cluster`: the
   * prop evaluator, reconciliations, expiries) run only when a scheduler outside calls POST /cron/{job},
   * e.g. to run the evaluator's pass at hours the broker picks. The instance's and the engine's own jobs
   * (the relay, the engine's syncs) are scheduled either way.
   */
  clusterJobs: Env['CLUSTER_JOBS']
  /** How long dispatched events stay in the outbox. */
  eventsRetentionMs: number
  /** The environment it was read from: a module reads its own variables with `moduleConfig`. */
  source: Readonly<Record<string, string | undefined>>
}

/** Settings the process cannot start with: the message names each variable and why, one per line. */
export class ConfigError extends Error {}

type Issue = { path: PropertyKey[]; message: string }

const invalid = (issues: Issue[]) =>
  new ConfigError(
    `Invalid configuration:\n${issues.map((i) => `  ${i.path.map(String).join('.') || '(env)'}: ${i.message}`).join('\n')}`,
  )

/** A variable holding JSON, checked against a schema; a readable error names the variable and field. */
export function parseJsonSetting<T>(name: string, schema: z.ZodType<T>, raw: string): T {
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch {
    throw invalid([{ path: [name], message: 'not valid JSON' }])
  }
  const r = schema.safeParse(value)
  if (!r.success) {
    const i = r.error.issues[0]
    throw invalid([{ path: [name, ...i.path], message: i.message }])
  }
  return r.data
}

/**
 * Parses the environment once; throws a readable error naming every bad variable. Given the modules of
 * the deployment, their variables (each module's declared `env` schema) are checked too, so one start
 * reports every invalid setting, the kernel's and the modules', at once.
 */
export function loadConfig(
  source: Record<string, string | undefined> = process.env,
  modules: readonly { env?: z.ZodType }[] = [],
): Config {
  const parsed = schema.safeParse(source)
  const issues: Issue[] = [
    ...(parsed.success ? [] : parsed.error.issues),
    ...(source.UPSTASH_REDIS_REST_URL && !source.REDIS_URL && !source.UPSTASH_REDIS_REST_TOKEN
      ? [{ path: ['UPSTASH_REDIS_REST_TOKEN'], message: 'required with UPSTASH_REDIS_REST_URL' }]
      : []),
    ...productionIssues(source),
    ...(source.CLUSTER_JOBS === 'external' && !source.CRON_SECRET
      ? [{ path: ['CLUSTER_JOBS'], message: 'external needs CRON_SECRET: nothing else could run the jobs' }]
      : []),
    ...modules.flatMap((m) => (m.env ? (m.env.safeParse(source).error?.issues ?? []) : [])),
  ]
  if (!parsed.success || issues.length > 0) throw invalid(issues)
  const e = parsed.data
  const production = e.APP_ENV === 'production'
  let cache: Config['cache'] = { kind: 'memory' }
  if (e.REDIS_URL) cache = { kind: 'redis', url: e.REDIS_URL }
  else if (e.UPSTASH_REDIS_REST_URL) {
    if (!e.UPSTASH_REDIS_REST_TOKEN)
      throw invalid([{ path: ['UPSTASH_REDIS_REST_TOKEN'], message: 'required with UPSTASH_REDIS_REST_URL' }])
    cache = { kind: 'upstash', url: e.UPSTASH_REDIS_REST_URL, token: e.UPSTASH_REDIS_REST_TOKEN }
  }
  return {
    env: e.APP_ENV,
    production,
    port: e.PORT,
    host: e.HOST,
    database: {
      url: e.DATABASE_URL,
      authToken: e.DATABASE_AUTH_TOKEN,
      cacheMb: e.DATABASE_CACHE_MB,
      writeTimeoutMs: e.DATABASE_WRITE_TIMEOUT_MS,
    },
    jwt: {
      secret: e.JWT_SECRET ?? DEV_JWT_SECRET,
      issuer: e.JWT_ISSUER,
      audience: e.JWT_AUDIENCE,
      ttlSeconds: e.TOKEN_TTL_SECONDS,
      cookieName: e.SESSION_COOKIE_NAME,
    },
    cache,
    cacheTimeoutMs: e.CACHE_TIMEOUT_MS,
    trustProxy: e.TRUST_PROXY,
    upload: { dir: e.UPLOAD_DIR, maxBytes: e.UPLOAD_MAX_BYTES },
    body: {
      maxBytes: e.BODY_MAX_BYTES,
      hardLimit: Math.max(e.BODY_MAX_BYTES, e.UPLOAD_MAX_BYTES + 64 * 1024),
    },
    signin: {
      maxFailures: e.SIGNIN_MAX_FAILURES,
      maxFailuresPerIp: e.SIGNIN_MAX_FAILURES_PER_IP,
      lockSeconds: e.SIGNIN_LOCK_SECONDS,
    },
    passwordWork: { concurrency: e.PASSWORD_WORK_CONCURRENCY, maxWaitMs: e.PASSWORD_WORK_MAX_WAIT_MS },
    seedDemo: production ? false : (e.SEED_DEMO ?? true),
    quotes: { feedToken: e.FEED_TOKEN },
    logLevel: e.LOG_LEVEL,
    cronSecret: e.CRON_SECRET,
    groupCommit: e.GROUP_COMMIT,
    role: e.ROLE,
    clusterJobs: e.CLUSTER_JOBS,
    eventsRetentionMs: e.EVENTS_RETENTION_HOURS * 3_600_000,
    source,
  }
}

/**
 * A module's own settings, read from the same environment (a module declares its variables in its
 * `config.ts` and as its definition's `env`; the kernel names none of them): invalid values fail the
 * start with the same readable error as the kernel's.
 */
export function moduleConfig<T extends z.ZodType>(config: Config, schema: T): z.infer<T> {
  const parsed = schema.safeParse(config.source)
  if (!parsed.success) throw invalid(parsed.error.issues)
  return parsed.data
}
