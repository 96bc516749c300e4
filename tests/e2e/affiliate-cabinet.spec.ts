import { expect, type Page, test } from '@playwright/test'

// The affiliate cabinet (issue 32) in Chromium on the brands' affiliate hosts (*.localhost is loopback):
// sign in, the demo funnel equal to the API, ranges, the rows behind a number, links, sign out; Beta's
// partner sees Beta only; keyboard only; a phone's width; nothing loaded from another origin.
const port = () => new URL(process.env.BASE_URL!).port
const cabinet = (host = 'affiliates.localhost') => `http://${host}:${port()}`
const shots = process.env.UPDATE_SCREENSHOTS ? 'docs' : 'test-results'

function watchOrigins(page: Page, origin: string) {
  const foreign: string[] = []
  page.on('request', (r) => {
    if (!r.url().startsWith(origin) && !r.url().startsWith('data:')) foreign.push(r.url())
  })
  return foreign
}

async function signIn(page: Page, origin: string, login: string, password: string, code: string) {
  await page.goto(`${origin}/login`)
  await page.getByLabel('Email or affiliate code').fill(login)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await expect(page.getByTestId('who')).toContainText(code)
}

/** A GET of the cabinet's API from the page itself (its cookie; Node cannot resolve *.localhost). */
const get = (page: Page, path: string) =>
  page.evaluate(async (p) => {
    const r = await fetch(p)
    return { status: r.status, body: await r.json().catch(() => null) }
  }, path)

test('sign in, the demo funnel equals the API, ranges, rows behind a number, links, sign out', async ({
  page,
  context,
}) => {
  const origin = cabinet()
  const foreign = watchOrigins(page, origin)
  await page.goto(`${origin}/login`)
  await page.screenshot({ path: `${shots}/cabinet-login.png` })
  await signIn(page, origin, 'partner@example.com', 'partner-pass-1', 'DEMOPARTNER')
  await expect(page.locator('nav')).toContainText('Demo partners')

  for (const range of ['30d', '90d']) {
    await page.getByTestId('range').selectOption(range)
    await expect(page).toHaveURL(new RegExp(`range=${range}`))
    const api = (await get(page, `/api/affiliate/dashboard?range=${range}`)).body
    for (const key of [
      'clicks',
      'registrations',
      'kyc_approvals',
      'first_deposits',
      'active_traders',
      'deposits',
    ])
      await expect(page.getByTestId(`funnel-${key}`).locator('.n')).toHaveText(String(api.funnel[key]))
    await expect(page.getByTestId('chart').locator('canvas')).toHaveCount(1)
  }
  await page.screenshot({ path: `${shots}/cabinet-dashboard.png`, fullPage: true })
  const funnel = (await get(page, '/api/affiliate/dashboard?range=90d')).body
  expect(funnel.funnel.clicks).toBeGreaterThan(0)
  expect(funnel.funnel.first_deposits).toBeGreaterThan(0)

  // a funnel number opens its rows: as many as it says
  await page.getByTestId('funnel-first_deposits').click()
  await expect(page).toHaveURL(/\/conversions\?kind=first_deposit&range=90d/)
  await expect(page.getByTestId('row-count')).toHaveText(`${funnel.funnel.first_deposits} rows`)
  await page.getByTestId('kind').selectOption('clicks')
  await expect(page).toHaveURL(/kind=clicks/)
  await expect(page.getByTestId('row-count')).toContainText(`${Math.min(50, funnel.funnel.clicks)} rows`)
  await page.getByTestId('kind').selectOption('registration')
  await expect(page.getByTestId('row-count')).toHaveText(`${funnel.funnel.registrations} rows`)
  await page.screenshot({ path: `${shots}/cabinet-conversions.png`, fullPage: true })

  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin })
  await page.getByRole('link', { name: 'Links' }).click()
  await expect(page.getByTestId('link-url')).toHaveCount(2)
  await page.getByRole('button', { name: 'Copy demo-spring' }).click()
  await expect(page.getByRole('status')).toHaveText('Link copied to the clipboard')
  expect(await page.evaluate(() => navigator.clipboard.readText())).toMatch(/\/go\/demo-spring$/)
  await page.screenshot({ path: `${shots}/cabinet-links.png`, fullPage: true })

  await page.getByRole('button', { name: 'Sign out' }).click()
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible()
  expect((await get(page, '/api/affiliate/me')).status).toBe(401)
  expect(foreign).toEqual([])
})

test("Beta's partner sees Beta only; its session does not open Demo's cabinet", async ({ page }) => {
  const beta = cabinet('affiliates.beta.localhost')
  await signIn(page, beta, 'BETAPARTNER', 'beta-partner-pass-1', 'BETAPARTNER')
  await expect(page.locator('nav')).toContainText('Beta partners')
  const rows = (await get(page, '/api/affiliate/conversions?range=90d&limit=200')).body
  const me = (await get(page, '/api/affiliate/me')).body
  expect(rows.rows.length).toBeGreaterThan(0)
  expect(rows.rows.every((r: { brand_id: number }) => r.brand_id === me.brand.id)).toBe(true)
  // the cookie belongs to Beta's cabinet host; Demo's cabinet asks for a sign-in
  await page.goto(`${cabinet()}/`)
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible()
})

test('keyboard only, at a phone width', async ({ page }) => {
  await page.setViewportSize({ width: 375, height: 740 })
  const origin = cabinet()
  await page.goto(`${origin}/login`)
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible()
  await page.keyboard.press('Tab')
  await expect(page.getByLabel('Email or affiliate code')).toBeFocused()
  await page.keyboard.type('DEMOPARTNER')
  await page.keyboard.press('Tab')
  await page.keyboard.type('partner-pass-1')
  await page.keyboard.press('Enter')
  await expect(page.getByTestId('who')).toContainText('DEMOPARTNER')
  // tab to the Links tab and follow it with Enter
  for (
    let i = 0;
    i < 10 &&
    !(await page.getByRole('link', { name: 'Links' }).evaluate((e) => e === document.activeElement));
    i++
  )
    await page.keyboard.press('Tab')
  await page.keyboard.press('Enter')
  await expect(page).toHaveURL(/\/links$/)
  await expect(page.getByTestId('link-url').first()).toBeVisible()
  for (const path of ['/', '/links', '/conversions']) {
    await page.goto(`${origin}${path}`)
    await page.waitForLoadState('networkidle')
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
    expect(overflow, path).toBeLessThanOrEqual(0)
  }
})

test('a custom period: dates in the picker, kept in the URL and across pages; the code signs in in any case', async ({
  page,
}) => {
  const origin = cabinet()
  await signIn(page, origin, 'demopartner', 'partner-pass-1', 'DEMOPARTNER')
  // opened by its URL without dates: the last 30 days, no error, no endless loading
  await page.goto(`${origin}/?range=custom`)
  await expect(page.getByTestId('funnel-clicks')).toBeVisible()
  await expect(page.getByRole('alert')).toHaveCount(0)
  await expect(page.getByTestId('from')).not.toHaveValue('')
  const year = new Date().getUTCFullYear()
  await page.getByTestId('from').fill(`${year}-01-01`)
  await expect(page).toHaveURL(new RegExp(`range=custom&from=${year}-01-01&to=`))
  const to = await page.getByTestId('to').inputValue()
  const api = (await get(page, `/api/affiliate/dashboard?range=custom&from=${year}-01-01&to=${to}`)).body
  await expect(page.getByTestId('funnel-registrations').locator('.n')).toHaveText(
    String(api.funnel.registrations),
  )
  await expect(page.getByTestId('unique-clicks')).toHaveText(String(api.funnel.unique_clicks))
  // a number opens its rows for the same custom period
  await page.getByTestId('funnel-registrations').click()
  await expect(page).toHaveURL(new RegExp(`kind=registration&range=custom&from=${year}-01-01`))
  await expect(page.getByTestId('row-count')).toHaveText(`${api.funnel.registrations} rows`)
  await expect(page.getByTestId('from')).toHaveValue(`${year}-01-01`)
})
