import { defineModule, definePort } from '../../kernel/module'
import { AccountsPort } from '../accounts'
import { AffiliateClicksPort, AffiliateCodesPort, CabinetPort, CustomerAttributionPort } from '../affiliate'
import { RegistrationAttributionPort } from '../auth'
import { AttributionEnv, attributionConfig } from './config'
import type { AttributionCtx } from './context'
import { seedAttributionDemo } from './demo'
import { attributionRoutes } from './routes'
import * as schema from './schema'
import { affiliateClicks } from './service/clicks'
import { customerAttributions } from './service/customer-attributions'
import { visitorOf } from './service/landing'
import { attributeRegistration } from './service/resolve'
import { pruneTouches } from './service/retention'
import { BufferedTouches, directTouches } from './service/touches'

/** What attribution offers: writing the touches its landing pages hold (a drain; tests read after it). */
export interface AttributionApi {
  flushTouches(): Promise<void>
}
export const AttributionPort = definePort<AttributionApi>('attribution')

/** Marketing attribution: touches, installs, the winning touch of a registration (README.md of this folder). */
export const attributionModule = defineModule({
  name: 'attribution',
  tags: [
    {
      name: 'Marketing attribution',
      description:
        "The brands' landing pages and tracking links (touches), app installs, a customer's attribution",
    },
  ],
  env: AttributionEnv,
  tables: schema,
  setup(k, ports) {
    const ctx: AttributionCtx = {
      ...k,
      accounts: ports.get(AccountsPort),
      codes: ports.get(AffiliateCodesPort),
      cabinet: ports.get(CabinetPort),
      touchWriter: k.config.groupCommit
        ? new BufferedTouches(k.db, (e, held) =>
            k.logger.log('warn', 'touches not written yet', {
              held,
              err: e instanceof Error ? e.message : String(e),
            }),
          )
        : directTouches(k.db),
      ...attributionConfig(k.config),
    }
    ports.provide(AffiliateClicksPort, affiliateClicks(ctx))
    ports.provide(CustomerAttributionPort, customerAttributions(ctx))
    ports.provide(AttributionPort, { flushTouches: () => ctx.touchWriter.flush() })
    ports.provide(RegistrationAttributionPort, (brand, input, meta) =>
      attributeRegistration(ctx, brand, {
        email: input.email,
        values: input.attribution,
        installationId: input.installation_id,
        visitorId: visitorOf(meta.cookies),
        ip: meta.ip,
        userAgent: meta.userAgent,
      }),
    )
    return {
      routes: attributionRoutes(ctx),
      stop: () => ctx.touchWriter.flush(),
      seedDemo: () => seedAttributionDemo(ctx),
      jobs: [
        {
          name: 'attribution.touches-retention',
          every: 3_600_000,
          scope: 'cluster',
          run: async ({ now }) => {
            await pruneTouches(ctx, now)
          },
        },
      ],
    }
  },
})

// its routes, for the type of the whole API (src/main/app-type.ts: Eden treaty)
export { attributionRoutes } from './routes'
