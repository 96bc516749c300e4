import { expect, type Page, test } from '@playwright/test'

const base = () => process.env.BASE_URL!

/** Pastes the token into Swagger UI's Authorize dialog (ApiTokenAuth, the first scheme). */
async function authorize(page: Page, token: string) {
  await page
    .getByRole('button', { name: /authorize/i })
    .first()
    .click()
  await page.locator('.modal-ux input[type=text]').first().fill(token)
  await page.locator('.modal-ux button.modal-btn.authorize').first().click()
  await page.locator('.modal-ux button.btn-done').first().click()
}

/**
 * Shows the operations of a tag through Swagger UI's filter box: with over a hundred operations the list is
 * virtualized (only what is in view is in the page), as a user would narrow it.
 */
async function showTag(page: Page, tag: string) {
  await page.locator('.operation-filter-input').fill(tag)
  await expect(page.locator('.opblock-tag', { hasText: tag }).first()).toBeVisible()
}

test('Swagger UI renders offline, lists the routes, and Try it out of GET /account/me answers 200', async ({
  page,
  request,
}) => {
  const external: string[] = []
  page.on('request', (r) => {
    if (!r.url().startsWith(base())) external.push(r.url())
  })
  const signIn = await request.post(`${base()}/sign/in`, { data: { login: 100001, password: 'demo-pass-1' } })
  expect(signIn.status()).toBe(200)
  const token = (await signIn.json()).__token as string

  await page.goto(`${base()}/swagger`)
  await expect(page.locator('.opblock').first()).toBeVisible({ timeout: 20_000 })
  for (const [tag, paths] of [
    ['Auth', ['/sign/in', '/password']],
    ['Account', ['/account/me', '/balance/me']],
    ['Uploads', ['/upload']],
  ] as const) {
    await showTag(page, tag)
    for (const path of paths)
      await expect(page.locator(`.opblock-summary-path[data-path="${path}"]`).first()).toBeVisible()
  }
  await showTag(page, 'Account')

  await authorize(page, token)

  const op = page.locator('.opblock-get', {
    has: page.locator('.opblock-summary-path[data-path="/account/me"]'),
  })
  await op.locator('.opblock-summary').click()
  await op.getByRole('button', { name: /try it out/i }).click()
  await op.getByRole('button', { name: /execute/i }).click()
  const status = op.locator('.live-responses-table .response .response-col_status').first()
  await expect(status).toHaveText('200', { timeout: 15_000 })
  await expect(op.locator('.live-responses-table .microlight').first()).toContainText('"login": 100001')
  expect(external).toEqual([])
})

test('Try it out: the example body of POST /trade/open works as is; uploads offer a file picker; JSON only', async ({
  page,
  request,
}) => {
  const signIn = await request.post(`${base()}/sign/in`, { data: { login: 100001, password: 'demo-pass-1' } })
  const token = (await signIn.json()).__token as string
  await page.goto(`${base()}/swagger`)
  await expect(page.locator('.opblock').first()).toBeVisible({ timeout: 20_000 })
  await authorize(page, token)

  await showTag(page, 'Trading')
  const open = page.locator('.opblock-post', {
    has: page.locator('.opblock-summary-path[data-path="/trade/open"]'),
  })
  await open.locator('.opblock-summary').click()
  await open.getByRole('button', { name: /try it out/i }).click()
  // one request content type offered: application/json
  const types = open.locator('.body-param-content-type select option')
  await expect(types).toHaveCount(1)
  await expect(types.first()).toHaveText('application/json')
  await expect(open.locator('textarea.body-param__text')).toContainText(`"symbol": "BTCUSD"`)
  await open.getByRole('button', { name: /execute/i }).click()
  const status = open.locator('.live-responses-table .response .response-col_status').first()
  await expect(status).toHaveText('200', { timeout: 15_000 })

  await showTag(page, 'Uploads')
  const upload = page.locator('.opblock-post', {
    has: page.locator('.opblock-summary-path[data-path="/upload"]'),
  })
  await upload.locator('.opblock-summary').click()
  await upload.getByRole('button', { name: /try it out/i }).click()
  await expect(upload.locator('input[type=file]')).toHaveCount(1)
  await expect(upload.locator('.body-param-content-type select option').first()).toHaveText(
    'multipart/form-data',
  )
})

test('/swagger/ with a trailing slash renders the same page; its meta description is one attribute', async ({
  page,
}) => {
  await page.goto(`${base()}/swagger/`)
  await expect(page.locator('.opblock').first()).toBeVisible({ timeout: 20_000 })
  const description = await page.locator('meta[name="description"]').getAttribute('content')
  expect(description).toContain('Clients must tolerate additional response fields.')
})
