import { defineModule } from '../../kernel/module'
import { AccountsPort } from '../accounts'
import { AffiliateCodesPort } from '../affiliate'
import { RegistrationAttributionPort } from '../auth'
import type { AttributionCtx } from './context'
import { attributionRoutes } from './routes'
import * as schema from './schema'
import { visitorOf } from './service/landing'
import { attributeRegistration } from './service/resolve'
import { touchWriter } from './service/touches'

/** Marketing attribution: touches, installs, the winning touch of a registration (README.md of this folder). */
export const attributionModule = defineModule({
  name: 'attribution',
  tags: [
    {
      name: 'Marketing attribution',
      description: "The brands' landing pages and tracking links (touches), app installs, a customer's attribution",
    },
  ],
  tables: schema,
  setup(k, ports) {
    const ctx: AttributionCtx = {
      ...k,
      accounts: ports.get(AccountsPort),
      codes: ports.get(AffiliateCodesPort),
      touchWriter: touchWriter(k.db, k.config.groupCommit),
      windowMs: k.config.attributionWindowDays * 86_400_000,
    }
    ports.provide(RegistrationAttributionPort, (brand, input, meta) =>
      attributeRegistration(ctx, brand, {
        values: input.attribution,
        installationId: input.installation_id,
        visitorId: visitorOf(meta.cookies),
        ip: meta.ip,
        userAgent: meta.userAgent,
      }),
    )
    return { routes: attributionRoutes(ctx) }
  },
})
