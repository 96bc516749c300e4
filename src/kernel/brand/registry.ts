import type { Db } from '../db/client'
import { brandHosts, brands } from './schema'

export interface Brand {
  id: number
  name: string
  affiliateHost: string
}

/** Lower-cased hostname without port; handles `[::1]:3000`. */
export function normalizeHost(raw: string | null | undefined): string {
  if (!raw) return ''
  const h = raw.trim().toLowerCase()
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1)
  const colon = h.indexOf(':')
  return colon === -1 ? h : h.slice(0, colon)
}

/**
 * Host allowlist held in memory: brands change rarely and every request needs one, so the table is
 * read at most once per `ttlMs` (stale-while-revalidate) and on `invalidate()` after a brand change.
 */
export class BrandRegistry {
  private byHostMap = new Map<string, Brand>()
  private byAffiliateHostMap = new Map<string, Brand>()
  private hostsByBrand = new Map<number, string[]>()
  private loadedAt = Number.NEGATIVE_INFINITY
  private loading: Promise<void> | null = null

  constructor(
    private readonly db: Db,
    private readonly ttlMs = 30_000,
  ) {}

  private async load() {
    const [b, h] = await Promise.all([this.db.select().from(brands), this.db.select().from(brandHosts)])
    const byId = new Map(b.map((x) => [x.id, { id: x.id, name: x.name, affiliateHost: x.affiliateHost }]))
    const byHost = new Map<string, Brand>()
    for (const row of h) {
      const brand = byId.get(row.brandId)
      if (brand) byHost.set(row.host, brand)
    }
    this.byHostMap = byHost
    this.byAffiliateHostMap = new Map([...byId.values()].map((b) => [b.affiliateHost, b]))
    const hosts = new Map<number, string[]>()
    for (const row of h) hosts.set(row.brandId, [...(hosts.get(row.brandId) ?? []), row.host])
    this.hostsByBrand = hosts
    this.loadedAt = Date.now()
  }

  private refresh(): Promise<void> {
    this.loading ??= this.load().finally(() => {
      this.loading = null
    })
    return this.loading
  }

  async byHost(host: string): Promise<Brand | null> {
    const age = Date.now() - this.loadedAt
    if (age === Number.POSITIVE_INFINITY) await this.refresh()
    else if (age > this.ttlMs) void this.refresh().catch(() => {})
    return this.byHostMap.get(host) ?? null
  }

  /** The brand whose affiliate cabinet is served on `host` (spec 4.17), or null. */
  async byAffiliateHost(host: string): Promise<Brand | null> {
    await this.byHost(host)
    return this.byAffiliateHostMap.get(host) ?? null
  }

  /** The hosts a brand's API and pages are served on. */
  async hostsOf(brandId: number): Promise<string[]> {
    await this.byHost('')
    return this.hostsByBrand.get(brandId) ?? []
  }

  invalidate() {
    this.loadedAt = Number.NEGATIVE_INFINITY
  }
}
