// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Sites a module declares (ADR 0022): a brand's hosts per site in the kernel's brand_hosts, the `site`
// guard and the document built from the declaration, and the typed attribution record.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Elysia } from 'elysia'
import { brandHosts } from '../../src/kernel/brand/schema'
import { BRAND_SITE, siteDeclarations } from '../../src/kernel/brand/sites'
import { MIGRATIONS_DIR, migrateDatabase } from '../../src/kernel/db/migrate'
import { security } from '../../src/kernel/http/security'
import { defineModule } from '../../src/kernel/module'
import { fromRecord, toRecord } from '../../src/modules/attribution/domain/record'
import { makeTestApp, type TestApp } from '../support/app'
import { tempDatabase } from '../support/database'

/** A module serving one route on a site of its own. */
const kioskModule = (site = 'kiosk') =>
  defineModule({
    name: 'kiosk',
    sites: [
      {
        name: 'kiosk',
        hostName: 'kiosk_host',
        description: "the brand's kiosk host",
        exampleHost: 'kiosk.localhost:3000',
      },
    ],
    tables: {},
    setup: (k) => ({
      routes: new Elysia({ name: 'kiosk', seed: k.instanceId })
        .use(security(k))
        .get('/kiosk/ping', ({ brand, principal }) => ({ brand: brand.name, principal }), {
          site: { site, access: 'public, on the kiosk host.' },
        }),
    }),
  })

let t: TestApp
beforeAll(async () => {
  t = await makeTestApp({ modules: [kioskModule()] })
  const demo = await t.ctx.brands.byHost('localhost')
  await t.ctx.db.insert(brandHosts).values({ host: 'kiosk.localhost', brandId: demo!.id, site: 'kiosk' })
  t.ctx.brands.invalidate()
})
afterAll(() => t.close())

describe('a site a module declares', () => {
  test("its routes answer on the brand's hosts of the site only", async () => {
    const ok = await t.request('GET', '/kiosk/ping', { host: 'kiosk.localhost:3000' })
    expect(ok.status).toBe(200)
    expect(ok.json).toEqual({ brand: 'Demo', principal: { site: 'kiosk' } })
    for (const host of ['localhost', 'affiliates.localhost', 'nowhere.localhost'])
      expect((await t.request('GET', '/kiosk/ping', { host })).json.error).toBe('NOT_FOUND')
    // nor does the kiosk host serve the brand's API, the cabinet or the root of the brand's hosts
    expect((await t.request('GET', '/account/me', { host: 'kiosk.localhost' })).json.error).toBe(
      'BRAND_NOT_FOUND',
    )
    expect((await t.request('GET', '/api/affiliate/me', { host: 'kiosk.localhost' })).json.error).toBe(
      'NOT_FOUND',
    )
    expect((await t.request('GET', '/', { host: 'kiosk.localhost' })).json.error).toBe('BRAND_NOT_FOUND')
  })

  test('the registry answers per site', async () => {
    const demo = await t.ctx.brands.byHost('localhost')
    expect(await t.ctx.brands.bySiteHost('kiosk', 'kiosk.localhost')).toEqual(demo)
    expect(await t.ctx.brands.bySiteHost('partner', 'affiliates.localhost')).toEqual(demo)
    expect(await t.ctx.brands.byHost('affiliates.localhost')).toBeNull()
    expect(await t.ctx.brands.bySiteHost('kiosk', 'localhost')).toBeNull()
    expect(await t.ctx.brands.hostsOf(demo!.id, 'kiosk')).toEqual(['kiosk.localhost'])
  })

  test('the document says where its routes are served, from the declaration', async () => {
    const doc = (await t.request('GET', '/swagger/json')).json
    const op = doc.paths['/kiosk/ping'].get
    expect(op['x-served-on']).toBe('kiosk_host')
    expect(op.servers).toEqual([
      {
        url: 'https://{kiosk_host}',
        description: "the brand's kiosk host",
        variables: { kiosk_host: { default: 'kiosk.localhost:3000' } },
      },
    ])
    expect(op.responses['404'].content['application/json'].schema.properties.error.enum).toEqual([
      'NOT_FOUND',
    ])
    expect(doc.paths['/api/affiliate/me'].get['x-served-on']).toBe('affiliate_host')
  })

  test('a site declared twice, or a guard naming no declared site, is refused at start-up', () => {
    const [kiosk] = kioskModule().sites ?? []
    expect(() => siteDeclarations([kiosk, kiosk])).toThrow('site kiosk is declared twice')
    expect(() => siteDeclarations([{ ...kiosk, name: BRAND_SITE }])).toThrow('declared twice')
    expect(() =>
      new Elysia().use(security(t.ctx)).get('/kiosk/typo', () => 'x', {
        site: { site: 'kiosks', access: 'public.' },
      }),
    ).toThrow('site kiosks: no module declares it')
  })
})

describe('migration 0019', () => {
  test("a brand's affiliate_host becomes its host of the partner site; its API hosts stay the brand's", async () => {
    const db = await tempDatabase('sites')
    const before = mkdtempSync(join(tmpdir(), 'tcs-migrations-'))
    try {
      cpSync(MIGRATIONS_DIR, before, { recursive: true })
      const journalPath = join(before, 'meta', '_journal.json')
      const journal = JSON.parse(readFileSync(journalPath, 'utf8'))
      const upto = journal.entries.findIndex((e: { tag: string }) => e.tag === '0019_brand_sites')
      journal.entries = journal.entries.slice(0, upto)
      writeFileSync(journalPath, JSON.stringify(journal))
      await migrateDatabase(db.db, before)
      await db.client.execute(`insert into brands (name, affiliate_host, created_at)
        values ('A', 'partners.a.test', 1), ('B', 'partners.b.test', 1)`)
      await db.client.execute(`insert into brand_hosts (host, brand_id) values ('a.test', 1), ('b.test', 2)`)
      await migrateDatabase(db.db)
      const rows = (await db.client.execute('select host, brand_id, site from brand_hosts order by host'))
        .rows
      expect(rows.map((r) => ({ ...r }) as Record<string, unknown>)).toEqual([
        { host: 'a.test', brand_id: 1, site: 'brand' },
        { host: 'b.test', brand_id: 2, site: 'brand' },
        { host: 'partners.a.test', brand_id: 1, site: 'partner' },
        { host: 'partners.b.test', brand_id: 2, site: 'partner' },
      ])
      const columns = (await db.client.execute('select * from brands limit 1')).columns
      expect(columns).toEqual(['id', 'name', 'created_at'])
    } finally {
      rmSync(before, { recursive: true, force: true })
      db.close()
    }
  })
})

describe("attribution's record of a customer", () => {
  test('what registration writes reads back typed; what is not a record reads as none', () => {
    const a = {
      values: { affiliate_code: 'DEMOPARTNER', click_id: 'c-1', utm_source: 'partner' },
      affiliateId: 3,
      linkId: 7,
      installationId: null,
      touchId: 12,
      wonBy: 'touch',
      decisionId: 40,
    }
    const record = toRecord(a)
    expect(record).toEqual({
      affiliate_code: 'DEMOPARTNER',
      click_id: 'c-1',
      utm_source: 'partner',
      affiliate_id: '3',
      link_id: '7',
      touch_id: '12',
      won_by: 'touch',
      decision_id: '40',
    })
    expect(fromRecord(JSON.stringify(record))).toEqual(a)
    // the values a registration body brought, kept as given where no attribution module decided
    expect(fromRecord(JSON.stringify({ utm_source: 'x' }))).toMatchObject({ affiliateId: null, linkId: null })
    for (const text of [null, '', 'not json', 'null', '[1]', '"text"']) expect(fromRecord(text)).toBeNull()
  })
})
