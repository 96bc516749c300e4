import { Elysia, t } from 'elysia'
import { ApiError } from '../../kernel/http/errors'
import { doc, errors } from '../../kernel/http/openapi'
import { Id, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import { periodDays, reportCsvName } from './cabinet/earnings'
import { csvAnswer } from './csv'
import { periodOf } from './domain/range'
import { Dimension, REPORT_CSV, ReportModel } from './report-models'
import { affiliateOfBrand } from './service/affiliates'
import { type ReportCtx, type ReportDimension, report, reportTable } from './service/reports'

const STAFF = { roles: ['SESSION_MANAGER', 'SESSION_ADMIN'] as const }
const TAG = 'Affiliates back office'

/**
 * Staff reports (issue 44): an affiliate's report on the brand by day, link, sub-id, country or landing
 * page, the same numbers the affiliate's cabinet shows (service/reports.ts), with a CSV export.
 */
export const affiliateReportRoutes = (ctx: ReportCtx) =>
  new Elysia({ name: 'affiliate-reports', seed: ctx.instanceId }).use(security(ctx)).get(
    '/manager/affiliate-reports',
    async ({ brand, query, set }) => {
      const p = periodOf({ range: 'custom', from: query.from, to: query.to }, ctx.clock.now())
      if (typeof p === 'string') throw new ApiError(400, 'INVALID_DATA', p)
      // an affiliate without access to this brand is not this brand's to report on
      await affiliateOfBrand(ctx, brand.id, query.affiliate_id)
      const r = {
        affiliate_id: query.affiliate_id,
        ...periodDays(p),
        ...(await report(ctx, {
          brandId: brand.id,
          affiliateId: query.affiliate_id,
          from: p.from,
          to: p.to,
          dimension: query.dimension as ReportDimension,
        })),
      }
      return query.format === 'csv'
        ? csvAnswer(set, `affiliate-${query.affiliate_id}-${reportCsvName(r)}`, reportTable(r))
        : r
    },
    {
      auth: STAFF,
      ...textInput({
        query: {
          affiliate_id: Id('affiliate id'),
          dimension: Dimension,
          from: t.String({ description: 'first day, YYYY-MM-DD (UTC)', example: '2026-11-01' }),
          to: t.String({
            description: 'last day, YYYY-MM-DD (UTC; at most 366 days)',
            example: '2026-11-30',
          }),
          format: t.Optional(
            t.UnionEnum(['json', 'csv'], {
              default: undefined,
              description:
                'csv: the table as a text/csv download (a header row; Content-Disposition attachment)',
            }),
          ),
        },
      }),
      response: {
        200: t.Union([t.Object({ affiliate_id: Id('affiliate id'), ...ReportModel.properties }), REPORT_CSV]),
        ...errors({ 404: ['AFFILIATE_NOT_FOUND'] }),
      },
      detail: doc(TAG, "An affiliate's report by day, link, sub-id, country or landing page", {
        csv: true,
        description:
          "The numbers of the affiliate's cabinet report (GET /api/affiliate/reports) for any days of the brand: clicks (raw and unique), " +
          'registrations, first deposits, deposit volume and commissions per currency, and the totals. format=csv downloads the table.',
      }),
    },
  )
