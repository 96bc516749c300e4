// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { count } from 'drizzle-orm'
import { uploads } from '../../src/modules/uploads/schema'
import { makeTestApp, type TestApp } from '../support/app'
import * as F from '../support/files'

let t: TestApp
let user: string
let other: string
beforeAll(async () => {
  t = await makeTestApp({ env: { UPLOAD_MAX_BYTES: '4096' } })
  user = await t.userToken()
  other = await t.userToken(100002)
})
afterAll(() => t.close())

function form(bytes: Uint8Array, name: string, purpose = 'attachment') {
  const f = new FormData()
  f.append('file', new File([bytes as Uint8Array<ArrayBuffer>], name))
  f.append('purpose', purpose)
  return f
}
const upload = (bytes: Uint8Array, name: string, purpose?: string, token = user) =>
  t.request('POST', '/upload', { token, form: form(bytes, name, purpose) })
const stored = async () => (await t.ctx.db.select({ n: count() }).from(uploads))[0].n

describe('POST /upload accepts each allowed type by its real signature', () => {
  const accepted: [string, Uint8Array, string][] = [
    ['a.png', F.PNG, 'image/png'],
    ['a.jpg', F.JPG, 'image/jpeg'],
    ['a.jpeg', F.JPG, 'image/jpeg'],
    ['a.gif', F.GIF, 'image/gif'],
    ['a.webp', F.WEBP, 'image/webp'],
    ['a.ico', F.ICO, 'image/x-icon'],
    ['a.pdf', F.PDF, 'application/pdf'],
    ['a.svg', F.SVG, 'image/svg+xml'],
    ['refs.svg', F.SVG_TEXT_REFS, 'image/svg+xml'],
    ['a.txt', new TextEncoder().encode('hello, world\nline two'), 'text/plain; charset=utf-8'],
    ['a.csv', new TextEncoder().encode('symbol,price\nEURUSD,1.1'), 'text/csv; charset=utf-8'],
    ['a.doc', F.CFB, 'application/msword'],
    ['a.xls', F.CFB, 'application/vnd.ms-excel'],
    ['a.docx', F.DOCX, 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
    ['a.xlsx', F.XLSX, 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
  ]
  test.each(accepted)('%s', async (name, bytes, contentType) => {
    const r = await upload(bytes, name)
    expect(r.status).toBe(200)
    expect(r.json.file_id).toBe(r.json.files[0].uuid)
    const ext = name.split('.')[1]
    expect(r.json.file_name).toBe(`${r.json.file_id}.${ext}`)
    expect(r.json.files[0]).toMatchObject({
      storage_name: r.json.file_name,
      original_name: name,
      extension: ext,
      content_type: contentType,
      file_size: bytes.length,
    })
    expect(r.json.files[0].checksum).toMatch(/^[0-9a-f]{64}$/)
    expect(r.json.avatar).toBeUndefined()
  })
})

describe('POST /upload rejects disguised and hostile files, storing nothing', () => {
  const rejected: [string, Uint8Array, string][] = (
    [
      ['page.png', F.HTML],
      ['page.txt', F.HTML],
      ['page.csv', F.HTML],
      ['run.pdf', F.ELF],
      ['setup.jpg', F.EXE],
      ['script.txt', F.SHELL],
      ['poly.gif', F.GIF_POLYGLOT],
      ['evil.svg', F.SVG_SCRIPT],
      ['onload.svg', F.SVG_ONLOAD],
      ['prefixed.svg', F.SVG_PREFIXED_SCRIPT],
      ['link.svg', F.SVG_ENCODED_JS_LINK],
      ['unicode.svg', F.SVG_UNICODE_PREFIXED_SCRIPT],
      ['stylesheet.svg', F.SVG_STYLESHEET_PI],
      ['broken.svg', F.SVG_BROKEN],
      ['html.svg', F.NOT_SVG_ROOT],
      ['js.pdf', F.PDF_JS],
      ['png-as.gif', F.PNG],
      ['empty.png', new Uint8Array()],
      ['page.html', F.HTML],
      ['noext', F.PNG],
      ['doc.docx', F.XLSX],
      ['avatar.svg', F.SVG, 'account_avatar'],
      ['avatar.pdf', F.PDF, 'account_avatar'],
    ] as [string, Uint8Array, string?][]
  ).map(([n, b, p]) => [n, b, p ?? 'attachment'])
  test.each(rejected)('%s', async (name, bytes, purpose) => {
    const before = await stored()
    const r = await upload(bytes, name, purpose)
    expect(r.status).toBe(400)
    expect(r.json.error).toBe('INVALID_DATA')
    expect(r.json.message).toContain('file')
    expect(await stored()).toBe(before)
  })

  test('oversized files answer 413 PAYLOAD_TOO_LARGE', async () => {
    const big = new Uint8Array(5000)
    big.set(F.PNG)
    const r = await upload(big, 'big.png')
    expect(r.status).toBe(413)
    expect(r.json.error).toBe('PAYLOAD_TOO_LARGE')
  })

  test('missing file or unknown purpose is 400 naming the field', async () => {
    const f = new FormData()
    f.append('purpose', 'attachment')
    const r = await t.request('POST', '/upload', { token: user, form: f })
    expect(r.status).toBe(400)
    expect(r.json.message).toContain('file')
    const p = await upload(F.PNG, 'a.png', 'malware')
    expect(p.status).toBe(400)
    expect(p.json.message).toContain('purpose')
  })

  test('401 without a token', async () => {
    expect((await t.request('POST', '/upload', { form: form(F.PNG, 'a.png') })).status).toBe(401)
  })
})

describe('avatars, listing and downloads', () => {
  test('an account_avatar upload returns avatar; PUT /account/me accepts it; another account cannot use it', async () => {
    const r = await upload(F.PNG, 'me.png', 'account_avatar')
    expect(r.status).toBe(200)
    expect(r.json.avatar).toBe(r.json.file_id)
    const put = await t.request('PUT', '/account/me', { token: user, body: { avatar: r.json.avatar } })
    expect(put.status).toBe(200)
    expect(put.json.avatar).toBe(r.json.avatar)
    expect((await t.request('GET', '/account/me', { token: user })).json.avatar).toBe(r.json.avatar)
    const steal = await t.request('PUT', '/account/me', { token: other, body: { avatar: r.json.avatar } })
    expect(steal.status).toBe(400)
  })

  test('list shows own uploads only; download serves own files with safe headers; others get 404', async () => {
    const svg = await upload(F.SVG, 'logo.svg')
    const mine = await t.request('GET', '/upload/list', { token: user })
    expect(mine.status).toBe(200)
    expect(mine.json.rows.some((r: any) => r.uuid === svg.json.file_id)).toBe(true)
    for (const row of mine.json.rows) expect(row.scope).toBe(1)
    const theirs = await t.request('GET', '/upload/list', { token: other })
    expect(theirs.json.rows.some((r: any) => r.uuid === svg.json.file_id)).toBe(false)

    const dl = await t.request('GET', `/upload/${svg.json.file_id}`, { token: user })
    expect(dl.status).toBe(200)
    expect(dl.headers.get('content-type')).toBe('image/svg+xml')
    expect(dl.headers.get('content-disposition')).toStartWith('attachment')
    expect(dl.headers.get('content-security-policy')).toContain("default-src 'none'")
    expect(dl.headers.get('x-content-type-options')).toBe('nosniff')
    expect(dl.headers.get('cache-control')).toBe('private, no-store')
    expect(dl.text).toBe(new TextDecoder().decode(F.SVG))
    expect((await t.request('GET', `/upload/${svg.json.file_id}`, { token: other })).status).toBe(404)
    expect((await t.request('GET', '/upload/not-a-uuid', { token: user })).status).toBe(400)
  })
})
