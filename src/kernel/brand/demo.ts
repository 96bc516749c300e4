import { eq } from 'drizzle-orm'
import type { Kernel } from '../kernel'
import { brandHosts, brands } from './schema'
import { BRAND_SITE } from './sites'

/** The demo brands (README): Demo on localhost, Beta on beta.localhost (their other sites: the modules' demos). */
const DEMO_BRANDS = [
  { name: 'Demo', hosts: ['localhost', '127.0.0.1'] },
  { name: 'Beta', hosts: ['beta.localhost'] },
] as const

/** Inserts the demo brands and hosts unless they exist (safe when two instances boot at once). */
export async function seedDemoBrands(k: Kernel) {
  await k.db.transaction(async (tx) => {
    for (const b of DEMO_BRANDS) {
      await tx.insert(brands).values({ name: b.name, createdAt: k.clock.now() }).onConflictDoNothing()
      const [row] = await tx.select({ id: brands.id }).from(brands).where(eq(brands.name, b.name))
      for (const host of b.hosts)
        await tx.insert(brandHosts).values({ host, brandId: row.id, site: BRAND_SITE }).onConflictDoNothing()
    }
  })
  k.brands.invalidate()
}
