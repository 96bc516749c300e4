import { type APIRequestContext, expect, test } from '@playwright/test'

// A newcomer's first deposit on the demo brand: the API starts it, the sandbox provider's hosted page
// (served by the app) takes the card in Chromium, its signed webhook credits the account.

const base = () => process.env.BASE_URL!

async function session(request: APIRequestContext) {
  const r = await request.post(`${base()}/customer/sign/in`, {
    data: { email: 'demo@example.com', password: 'demo-pass-1' },
  })
  expect(r.status()).toBe(200)
  return (await r.json()).__token as string
}

async function balance(request: APIRequestContext, token: string) {
  const r = await request.get(`${base()}/account/me?login=100001`, { headers: { authorization: token } })
  return (await r.json()).balance as number
}

async function startDeposit(request: APIRequestContext, token: string, amount: number) {
  const r = await request.post(`${base()}/cashier/deposit`, {
    headers: { authorization: token },
    data: { login: 100001, method: 'card', amount },
  })
  expect(r.status()).toBe(200)
  const body = await r.json()
  expect(body.next.type).toBe('redirect')
  return { id: body.transaction.id as number, url: body.next.url as string }
}

const statusOf = async (request: APIRequestContext, token: string, id: number) =>
  (
    await (
      await request.get(`${base()}/cashier/transactions/${id}`, { headers: { authorization: token } })
    ).json()
  ).status_name as string

test('pay on the hosted page: the balance shows the deposit', async ({ page, request }) => {
  const token = await session(request)
  const before = await balance(request, token)
  const d = await startDeposit(request, token, 125)
  await page.goto(d.url)
  await expect(page.locator('#amount')).toHaveText('125 USD')
  await page.getByRole('button', { name: 'Pay', exact: true }).click()
  await expect(page.locator('#status')).toHaveAttribute('data-status', 'captured')
  await page.locator('#back').click()
  await expect(page.locator('#done')).toBeVisible()
  await expect.poll(() => balance(request, token), { timeout: 10_000 }).toBe(before + 125)
  expect(await statusOf(request, token, d.id)).toBe('credited')
})

test('decline on the hosted page: the balance is unchanged', async ({ page, request }) => {
  const token = await session(request)
  const before = await balance(request, token)
  const d = await startDeposit(request, token, 75)
  await page.goto(d.url)
  await page.getByRole('button', { name: 'Decline' }).click()
  await expect(page.locator('#status')).toHaveAttribute('data-status', 'declined')
  await expect.poll(() => statusOf(request, token, d.id), { timeout: 10_000 }).toBe('failed')
  expect(await balance(request, token)).toBe(before)
})

test('3-D Secure: pending until the customer confirms, then credited', async ({ page, request }) => {
  const token = await session(request)
  const before = await balance(request, token)
  const d = await startDeposit(request, token, 40)
  await page.goto(d.url)
  await page.getByRole('button', { name: 'Pay with 3-D Secure' }).click()
  await expect(page.locator('#status')).toHaveAttribute('data-status', 'pending_3ds')
  expect(await balance(request, token)).toBe(before)
  await page.getByRole('button', { name: 'Confirm (3-D Secure)' }).click()
  await expect(page.locator('#status')).toHaveAttribute('data-status', 'captured')
  await expect.poll(() => balance(request, token), { timeout: 10_000 }).toBe(before + 40)
})
