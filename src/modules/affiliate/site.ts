import type { SiteDeclaration } from '../../kernel/module'

/**
 * The partner site: the cabinet and the integration API, on each brand's `affiliate_host` (spec 4.17),
 * kept in the kernel's `brand_hosts` under this site's name.
 */
export const PARTNER_SITE: SiteDeclaration = {
  name: 'partner',
  hostName: 'affiliate_host',
  description: "the brand's affiliate_host (e.g. affiliates.localhost:3000 in development)",
  exampleHost: 'affiliates.localhost:3000',
}
