// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq, inArray } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { uploads } from '../../src/modules/uploads/schema'
import { RELEASED_TTL_MS, sweepUploads, UNATTACHED_TTL_MS } from '../../src/modules/uploads/service'
import { makeTestApp, type TestApp } from '../support/app'
import { databaseBefore } from '../support/database'
import * as F from '../support/files'

/**
 * The `uploads.sweep` job: uploads no record points to leave (never attached within UNATTACHED_TTL_MS, or
 * released — a replaced avatar — RELEASED_TTL_MS ago), row and stored file; attached ones stay.
 */

const HOUR = 3_600_000
const clock = new ManualClock(Date.now())
let t: TestApp

beforeAll(async () => {
  t = await makeTestApp({ clock })
})
afterAll(() => t.close())

// sessions end as the clock moves on by days: each request signs in anew
const customer = () => t.customerToken()
const user = () => t.userToken()

async function upload(as: () => Promise<string>, purpose: string, bytes = F.PNG) {
  const f = new FormData()
  f.append('file', new File([bytes], 'scan.png', { type: 'image/png' }))
  f.append('purpose', purpose)
  const r = await t.request('POST', '/upload', { token: await as(), form: f })
  expect(r.status).toBe(200)
  return { uuid: r.json.file_id as string, file: join(t.config.upload.dir, r.json.file_name as string) }
}
const row = async (uuid: string) => (await t.ctx.db.select().from(uploads).where(eq(uploads.uuid, uuid)))[0]
/** Whether the row and the stored file are both there (true) or both gone (false). */
async function kept(u: { uuid: string; file: string }) {
  const r = !!(await row(u.uuid))
  expect(existsSync(u.file)).toBe(r)
  return r
}
const download = async (uuid: string, as: () => Promise<string>) =>
  t.request('GET', `/upload/${uuid}`, { token: await as() })

describe('uploads.sweep', () => {
  test('a never-attached file leaves after UNATTACHED_TTL_MS, row and file; then it reads as an unknown one', async () => {
    const u = await upload(customer, 'kyc_document')
    clock.advance(UNATTACHED_TTL_MS - HOUR)
    await t.runJob('uploads.sweep')
    expect(await kept(u)).toBe(true)
    expect((await download(u.uuid, customer)).status).toBe(200)
    clock.advance(2 * HOUR)
    await t.runJob('uploads.sweep')
    expect(await kept(u)).toBe(false)
    const swept = await download(u.uuid, customer)
    const unknown = await download(crypto.randomUUID(), customer)
    expect(swept.status).toBe(404)
    expect(swept.json).toEqual(unknown.json)
  })

  test("a general file (purpose attachment) is the principal's own: never swept though nothing attaches it", async () => {
    const u = await upload(customer, 'attachment')
    clock.advance(30 * 24 * HOUR)
    await t.runJob('uploads.sweep')
    expect(await kept(u)).toBe(true)
    expect((await download(u.uuid, customer)).status).toBe(200)
  })

  test("an attached KYC document's file stays, its staff read too", async () => {
    const u = await upload(customer, 'kyc_document')
    const a = await t.request('POST', '/customer/kyc/documents', {
      token: await customer(),
      body: { file_id: u.uuid, step: 'identity', document_type: 'passport', valid_until: '2031-01-01' },
    })
    expect(a.status).toBe(200)
    expect((await row(u.uuid))?.attachedAt).toBe(clock.now())
    clock.advance(UNATTACHED_TTL_MS + RELEASED_TTL_MS + HOUR)
    await t.runJob('uploads.sweep')
    expect(await kept(u)).toBe(true)
    const file = await t.request('GET', `/manager/kyc/documents/${a.json.document.id}/file`, {
      token: await t.staffToken(),
    })
    expect(file.status).toBe(200)
  })

  test("a replaced avatar's old file leaves a day later, the new one stays; one shown again is kept", async () => {
    const setAvatar = async (avatar: string) =>
      t.request('PUT', '/account/me', { token: await user(), body: { avatar } })
    const a = await upload(user, 'account_avatar')
    const b = await upload(user, 'account_avatar')
    const c = await upload(user, 'account_avatar')
    expect((await setAvatar(a.uuid)).status).toBe(200)
    expect((await setAvatar(b.uuid)).status).toBe(200)
    expect((await row(a.uuid))?.releasedAt).toBe(clock.now())
    expect((await setAvatar(c.uuid)).status).toBe(200)
    // b shown again within the day: in use again
    expect((await setAvatar(b.uuid)).status).toBe(200)
    expect((await row(b.uuid))?.releasedAt).toBeNull()
    clock.advance(RELEASED_TTL_MS - HOUR)
    await t.runJob('uploads.sweep')
    expect(await kept(a)).toBe(true)
    clock.advance(2 * HOUR)
    await t.runJob('uploads.sweep')
    expect(await kept(a)).toBe(false)
    expect(await kept(c)).toBe(false)
    expect(await kept(b)).toBe(true)
    expect((await download(a.uuid, user)).status).toBe(404)
    expect((await download(b.uuid, user)).status).toBe(200)
    // long after, the avatar in use is still there
    clock.advance(UNATTACHED_TTL_MS + RELEASED_TTL_MS)
    await t.runJob('uploads.sweep')
    expect(await kept(b)).toBe(true)
    // a swept avatar cannot be shown again: 400 as a foreign one, the account keeps b
    const again = await setAvatar(a.uuid)
    expect(again.status).toBe(400)
    expect((await t.request('GET', '/account/me', { token: await user() })).json.avatar).toBe(b.uuid)
  })

  test("an upload records its store; the sweep leaves another store's rows (the engine in Bun beside Workers' R2); an unrecorded one is the disk's when its file is here, else R2's", async () => {
    const mine = await upload(customer, 'kyc_document')
    const other = await upload(customer, 'kyc_document')
    const legacy = await upload(customer, 'kyc_document')
    // from before 0050, its bytes uploaded at the edge (not on this disk)
    const legacyEdge = await upload(customer, 'kyc_document')
    rmSync(legacyEdge.file)
    expect((await row(mine.uuid))?.store).toBe('disk')
    await t.ctx.db.update(uploads).set({ store: 'r2' }).where(eq(uploads.uuid, other.uuid))
    await t.ctx.db
      .update(uploads)
      .set({ store: null })
      .where(inArray(uploads.uuid, [legacy.uuid, legacyEdge.uuid]))
    clock.advance(UNATTACHED_TTL_MS + HOUR)
    await t.runJob('uploads.sweep')
    expect(await kept(mine)).toBe(false)
    expect(await kept(legacy)).toBe(false)
    // its bytes are where this process cannot delete them: its row stays for a run where they are
    expect(await row(other.uuid)).toBeDefined()
    // an unrecorded row whose file this disk does not hold is R2's from then on: left to the Worker
    expect((await row(legacyEdge.uuid))?.store).toBe('r2')
  })

  test("a customer's avatar on two accounts is released only when neither shows it", async () => {
    const x = await upload(customer, 'account_avatar')
    const set = async (login: number, avatar: string) =>
      (await t.request('PUT', '/account/me', { token: await customer(), body: { login, avatar } })).status
    expect(await set(100001, x.uuid)).toBe(200)
    expect(await set(100002, x.uuid)).toBe(200)
    expect(await set(100002, '')).toBe(200)
    expect((await row(x.uuid))?.releasedAt).toBeNull()
    clock.advance(RELEASED_TTL_MS + HOUR)
    await t.runJob('uploads.sweep')
    expect(await kept(x)).toBe(true)
    expect(await set(100001, '')).toBe(200)
    expect((await row(x.uuid))?.releasedAt).toBe(clock.now())
    clock.advance(RELEASED_TTL_MS + HOUR)
    await t.runJob('uploads.sweep')
    expect(await kept(x)).toBe(false)
  })

  test('two runs at once delete each upload once, without an error', async () => {
    const files = [] as { uuid: string; file: string }[]
    for (let i = 0; i < 4; i++) files.push(await upload(customer, 'kyc_document'))
    clock.advance(UNATTACHED_TTL_MS + HOUR)
    const storage = t.ctx.storage
    const real = storage.delete.bind(storage)
    const deleted: string[] = []
    storage.delete = (key) => {
      deleted.push(key)
      return real(key)
    }
    try {
      const now = clock.now()
      const runs = await Promise.all([sweepUploads(t.ctx, now), sweepUploads(t.ctx, now)])
      expect(runs[0].rows + runs[1].rows).toBe(4)
      expect(runs[0].failed + runs[1].failed).toBe(0)
    } finally {
      storage.delete = real
    }
    expect(deleted.sort()).toEqual(files.map((f) => f.file.split('/').at(-1)!).sort())
    for (const f of files) expect(await kept(f)).toBe(false)
  })

  test('a stored file that cannot be deleted is logged and left: the row goes, the job does not fail', async () => {
    const u = await upload(customer, 'kyc_document')
    clock.advance(UNATTACHED_TTL_MS + HOUR)
    const storage = t.ctx.storage
    const real = storage.delete.bind(storage)
    storage.delete = async () => {
      throw new Error('bucket unavailable')
    }
    try {
      await t.runJob('uploads.sweep')
    } finally {
      storage.delete = real
    }
    expect(await row(u.uuid)).toBeUndefined()
    expect(existsSync(u.file)).toBe(true)
    expect((await download(u.uuid, customer)).status).toBe(404)
  })
})

test('migration 0048 marks every upload made before it as attached (it may be in use)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'uploads-attached-migration-'))
  try {
    const { client, upgrade } = await databaseBefore(dir, '0048')
    await client.execute(`insert into uploads (uuid, brand_id, scope, owner_id, purpose, file_name, original_name,
        extension, content_type, file_size, checksum, signature, created_at)
      values ('u1', 1, 2, 1, 'kyc_document', 'u1.png', 'a.png', 'png', 'image/png', 1, 'x', 'png', 1234)`)
    await upgrade()
    const r = (await client.execute('select attached_at, released_at from uploads')).rows
    expect(r.map((x) => [Number(x.attached_at), x.released_at])).toEqual([[1234, null]])
    client.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
