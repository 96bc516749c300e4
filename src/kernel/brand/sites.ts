/**
 * The brand's own site: its API and its pages, on the hosts `brand: true` and `auth` routes resolve the
 * brand from (brand_hosts rows of this site).
 */
export const BRAND_SITE = 'brand'

/**
 * Another site of every brand, declared by the module that serves it (ModuleDefinition.sites). Its routes
 * (the `site` guard, kernel/http/security.ts) answer only on a brand's hosts of it, read from
 * `brand_hosts` (`site` = its name), and the document tells clients where to call them.
 */
export interface SiteDeclaration {
  /** Its name: `brand_hosts.site` of its hosts, and what the `site` guard of its routes names. */
  name: string
  /** What clients know a brand's host of it by: the document's `x-served-on` and server variable. */
  hostName: string
  /** A brand's host of it, for the servers entry of its routes in the document. */
  description: string
  /** A host of it in development, with the port (the server variable's default). */
  exampleHost: string
}

/** The sites of a deployment, by name: each declared once, none named like the brand's own. */
export function siteDeclarations(declared: readonly SiteDeclaration[]): Map<string, SiteDeclaration> {
  const sites = new Map<string, SiteDeclaration>()
  for (const s of declared) {
    if (s.name === BRAND_SITE || sites.has(s.name)) throw new Error(`site ${s.name} is declared twice`)
    sites.set(s.name, s)
  }
  return sites
}
