import type { Db } from '../db/client'
import { SingleFlight } from '../single-flight'
import { brandHosts, brands } from './schema'
import { BRAND_SITE } from './sites'

export interface Brand {
  id: number
  name: string
}

/** Lower-cased hostname without port; handles `[::1]:3000`. */
export function normalizeHost(raw: string | null | undefined): string {
  if (!raw) return ''
  const h = raw.trim().toLowerCase()
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1)
  const colon = h.indexOf(':')
  return colon === -1 ? h : h.slice(0, colon)
}

/** A host of a brand and the site it serves there (kernel/brand/sites.ts). */
interface BrandHost {
  brand: Brand
  site: string
}

/**
 * Host allowlist held in memory: brands change rarely and every request needs one, so the table is
 * read at most once per `ttlMs` (stale-while-revalidate) and on `invalidate()` after a brand change.
 */
export class BrandRegistry {
  private byHostMap = new Map<string, BrandHost>()
  /** keyed `brandId site` */
  private hostsBySite = new Map<string, string[]>()
  private loadedAt = Number.NEGATIVE_INFINITY
  static readonly RETRY_MS = 5_000
  private readonly loading: SingleFlight

  /** `edge`: a reload is not shared between requests (kernel/single-flight). */
  constructor(
    private readonly db: Db,
    private readonly edge = false,
    private readonly ttlMs = 30_000,
  ) {
    this.loading = new SingleFlight(!edge)
  }

  private async load() {
    const [b, h] = await Promise.all([this.db.select().from(brands), this.db.select().from(brandHosts)])
    const byId = new Map(b.map((x) => [x.id, { id: x.id, name: x.name }]))
    const byHost = new Map<string, BrandHost>()
    const hosts = new Map<string, string[]>()
    for (const row of h) {
      const brand = byId.get(row.brandId)
      if (brand) byHost.set(row.host, { brand, site: row.site })
      const key = `${row.brandId} ${row.site}`
      hosts.set(key, [...(hosts.get(key) ?? []), row.host])
    }
    this.byHostMap = byHost
    this.hostsBySite = hosts
    this.loadedAt = Date.now()
  }

  private refresh(): Promise<void> {
    return this.loading.run(() => this.load())
  }

  /**
   * Loaded once before the first answer; past the TTL, reloaded behind answers from what is held (at the
   * edge, before the answer: a Worker drops what a request leaves running). A failed reload keeps what is
   * held and is tried again RETRY_MS later, not by every request meanwhile (each would wait for it).
   */
  private ready(): Promise<void> | null {
    const age = Date.now() - this.loadedAt
    if (age === Number.POSITIVE_INFINITY) return this.refresh()
    if (age <= this.ttlMs) return null
    const reload = this.refresh().catch(() => {
      this.loadedAt = Math.max(this.loadedAt, Date.now() - this.ttlMs + BrandRegistry.RETRY_MS)
    })
    return this.edge ? reload : null
  }

  /** The brand and site served on `host`, or null: not a host of any brand. */
  async siteOf(host: string): Promise<BrandHost | null> {
    const loading = this.ready()
    if (loading) await loading
    return this.byHostMap.get(host) ?? null
  }

  /** The brand whose API and pages are served on `host`, or null. */
  byHost(host: string): Promise<Brand | null> {
    return this.bySiteHost(BRAND_SITE, host)
  }

  /** The brand whose `site` is served on `host`, or null. */
  async bySiteHost(site: string, host: string): Promise<Brand | null> {
    const loading = this.ready()
    if (loading) await loading
    const at = this.byHostMap.get(host)
    return at?.site === site ? at.brand : null
  }

  /** The hosts of a brand's site: by default the ones its API and pages are served on. */
  async hostsOf(brandId: number, site = BRAND_SITE): Promise<string[]> {
    const loading = this.ready()
    if (loading) await loading
    return this.hostsBySite.get(`${brandId} ${site}`) ?? []
  }

  invalidate() {
    this.loadedAt = Number.NEGATIVE_INFINITY
  }
}
