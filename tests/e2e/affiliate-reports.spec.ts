import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { expect, type Page, test } from '@playwright/test'

// Issue 44 in Chromium: the dashboard's earnings (each figure opens its commission rows), the statements
// (list, one statement's rows, only its own), the reports (dimension, range, totals equal to the API, the
// CSV download). A server of its own on a database file this spec adds commission rows and statements to
// (what the ledger and a period close write; their rules are tested in affiliate-commissions.test.ts).
const DAY = 86_400_000
let server: ChildProcess
let dir: string
let base: URL
let statementId = 0
let othersStatement = 0
const now = Date.now()
const period = (ms: number) => new Date(ms).toISOString().slice(0, 7)
const lastMonth = period(Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 0))
const cabinet = () => `http://affiliates.localhost:${base.port}`

test.beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tcs-e2e-reports-'))
  const file = join(dir, 'app.db')
  // the first start migrates and seeds the file; the rows are added while no server holds it (a running
  // server's connection did not see another process's commits in time), then it serves them
  base = await start(file)
  await stop()
  const db = createClient({ url: `file:${file}` })
  // the server writes too (its jobs): wait for the lock rather than fail
  await db.execute('pragma busy_timeout = 10000')
  const aff = (await db.execute("select id, brand_id from affiliates where code = 'DEMOPARTNER'")).rows[0]
  const [affId, brandId] = [Number(aff.id), Number(aff.brand_id)]
  const customers = (
    await db.execute({
      sql: 'select customer_id from affiliate_customers where affiliate_id = ?',
      args: [affId],
    })
  ).rows.map((r) => Number(r.customer_id))
  const insert = (o: {
    customer: number
    kind: string
    amount: number
    currency: string
    at: number
    per?: string
    key: string
  }) =>
    db.execute({
      sql: `insert into affiliate_commissions (brand_id, affiliate_id, customer_id, kind, key, period, amount_minor, currency,
              basis_minor, rate_bp, plan_id, plan_version, fact_ids, event_time, created_at, updated_at)
            values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 1, '[1]', ?, ?, ?)`,
      args: [
        brandId,
        affId,
        o.customer,
        o.kind,
        o.key,
        o.per ?? period(o.at),
        o.amount,
        o.currency,
        o.amount * 4,
        o.kind === 'cpa' ? 0 : 2_500,
        o.at,
        now,
        now,
      ],
    })
  if (customers.length !== 6) throw new Error(`demo customers: ${customers.length}`)
  for (const [i, c] of customers.entries()) {
    await insert({
      customer: c,
      kind: 'cpa',
      amount: 20_000,
      currency: 'USD',
      at: now - (2 + i) * DAY,
      key: `e2e:${c}:cpa`,
    })
    await insert({
      customer: c,
      kind: 'revshare',
      amount: 150 * (i + 1),
      currency: 'EUR',
      at: now - (1 + i) * DAY,
      key: `e2e:${c}:rev`,
    })
    await insert({
      customer: c,
      kind: 'revshare',
      amount: 1_000,
      currency: 'USD',
      at: Date.parse(`${lastMonth}-10T00:00:00Z`),
      key: `e2e:${c}:old`,
    })
  }
  const totals = JSON.stringify([
    { currency: 'USD', amount_minor: 1_000 * customers.length, rows: customers.length },
  ])
  // the demo may have closed last month already: its statement then
  await db.execute({
    sql: `insert or ignore into affiliate_statements (brand_id, affiliate_id, period, status, totals, rows, created_at) values (?, ?, ?, 'approved', ?, ?, ?)`,
    args: [brandId, affId, lastMonth, totals, customers.length, now],
  })
  const s = await db.execute({
    sql: 'select id from affiliate_statements where brand_id = ? and affiliate_id = ? and period = ?',
    args: [brandId, affId, lastMonth],
  })
  statementId = Number(s.rows[0].id)
  const o = await db.execute({
    sql: `insert into affiliate_statements (brand_id, affiliate_id, period, status, totals, rows, created_at) values (?, ?, ?, 'pending', ?, 1, ?) returning id`,
    args: [brandId, affId + 1000, lastMonth, totals, now],
  })
  othersStatement = Number(o.rows[0].id)
  db.close()
  base = await start(file)
})

async function start(file: string) {
  server = spawn('bun', ['scripts/serve-temp.ts'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, LOG_LEVEL: 'warn', QUOTE_SIMULATOR: '0', SERVE_DATABASE_URL: `file:${file}` },
  })
  return new URL(
    await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('server did not start')), 30_000)
      let buf = ''
      server.stdout!.on('data', (d: Buffer) => {
        buf += d.toString()
        const m = /READY (\S+)/.exec(buf)
        if (m) {
          clearTimeout(timer)
          resolve(m[1])
        }
      })
    }),
  )
}

async function stop() {
  const exited = new Promise((r) => server.once('exit', r))
  server.kill('SIGTERM')
  await exited
}

test.afterAll(async () => {
  await stop()
  rmSync(dir, { recursive: true, force: true })
})

async function signIn(page: Page) {
  await page.goto(`${cabinet()}/login`)
  await page.getByLabel('Email or affiliate code').fill('partner@example.com')
  await page.getByLabel('Password').fill('partner-pass-1')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await expect(page.getByTestId('who')).toContainText('DEMOPARTNER')
}

const get = (page: Page, path: string) =>
  page.evaluate(async (p) => {
    const r = await fetch(p)
    return { status: r.status, body: await r.json().catch(() => null) }
  }, path)

test('earnings on the dashboard: each figure opens the commission rows behind it', async ({ page }) => {
  await signIn(page)
  await page.getByTestId('range').selectOption('30d')
  const e = (await get(page, '/api/affiliate/earnings?range=30d')).body
  expect(e.totals.map((t: { currency: string }) => t.currency)).toEqual(['EUR', 'USD'])
  for (const t of e.totals)
    await expect(page.getByTestId(`earnings-total-${t.currency}`)).toContainText(`(${t.rows} rows)`)
  const cpa = e.by_kind.find((k: { kind: string }) => k.kind === 'cpa')
  await page.getByTestId('earnings-cpa-USD').click()
  await expect(page).toHaveURL(/\/commissions\?kind=cpa&range=30d/)
  await expect(page.getByTestId('row-count')).toHaveText(`${cpa.rows} rows`)
  await expect(page.getByTestId('commission-rows').locator('tbody tr').first()).toContainText('200.00 USD')
  await page.screenshot({ path: 'test-results/cabinet-commissions.png', fullPage: true })
  // the current month's running total opens that period's rows
  await page.goto(`${cabinet()}/`)
  await page.getByTestId('earnings-current').click()
  await expect(page).toHaveURL(new RegExp(`/commissions\\?period=${e.current_period.period}`))
  const rows = e.current_period.totals.reduce((s: number, t: { rows: number }) => s + t.rows, 0)
  await expect(page.getByTestId('row-count')).toHaveText(`${rows} rows`)
})

test('statements: the list, one statement with its rows, and nobody else’s', async ({ page }) => {
  await signIn(page)
  await page.getByRole('link', { name: 'Statements' }).click()
  await expect(page).toHaveURL(/\/statements$/)
  const list = (await get(page, '/api/affiliate/statements')).body.rows
  expect(list.map((x: { id: number }) => x.id)).toContain(statementId)
  await expect(page.getByTestId('statements').locator('tbody tr')).toHaveCount(list.length)
  await page.getByTestId(`statement-${lastMonth}`).click()
  await expect(page).toHaveURL(new RegExp(`/statements/${statementId}$`))
  const one = (await get(page, `/api/affiliate/statements/${statementId}?limit=200`)).body
  await expect(page.getByTestId('statement-status')).toHaveText(one.statement.status)
  await expect(page.getByTestId('row-count')).toHaveText(`${one.rows.length} rows`)
  await expect(page.getByTestId('csv')).toHaveAttribute(
    'href',
    `/api/affiliate/statements/${statementId}?format=csv`,
  )
  await page.screenshot({ path: 'test-results/cabinet-statement.png', fullPage: true })
  expect((await get(page, `/api/affiliate/statements/${othersStatement}`)).status).toBe(404)
  await page.goto(`${cabinet()}/statements/${othersStatement}`)
  await expect(page.getByRole('alert')).toContainText('statement not found')
})

test('reports: a dimension and a range, totals equal to the API, the CSV download', async ({ page }) => {
  await signIn(page)
  await page.getByRole('link', { name: 'Reports' }).click()
  await expect(page).toHaveURL(/\/reports$/)
  await page.getByTestId('dimension').selectOption('sub1')
  await page.getByTestId('range').selectOption('90d')
  await expect(page).toHaveURL(/\/reports\?dimension=sub1&range=90d/)
  const r = (await get(page, '/api/affiliate/reports?dimension=sub1&range=90d')).body
  await expect(page.getByTestId('report').locator('tbody tr')).toHaveCount(r.rows.length)
  const total = page.getByTestId('report-total')
  await expect(total.locator('td').nth(0)).toHaveText(String(r.totals.clicks))
  await expect(total.locator('td').nth(2)).toHaveText(String(r.totals.registrations))
  await expect(page.getByTestId('report')).toContainText('spring')
  await page.screenshot({ path: 'test-results/cabinet-reports.png', fullPage: true })
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('csv').click()])
  expect(download.suggestedFilename()).toMatch(/^report-sub1-\d{4}-\d{2}-\d{2}-\d{4}-\d{2}-\d{2}\.csv$/)
  const lines = readFileSync((await download.path())!, 'utf8')
    .trimEnd()
    .split('\r\n')
  expect(lines[0].split(',').slice(0, 5)).toEqual([
    'sub1',
    'clicks',
    'unique_clicks',
    'registrations',
    'first_deposits',
  ])
  expect(lines).toHaveLength(r.rows.length + 2)
  expect(lines[lines.length - 1].split(',')[3]).toBe(String(r.totals.registrations))
  // by day: a row per day of the range
  await page.getByTestId('dimension').selectOption('day')
  await expect(page.getByTestId('report').locator('tbody tr')).toHaveCount(90)
})
