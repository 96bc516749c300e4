// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeTestApp, type TestApp } from '../support/app'
import * as F from '../support/files'

// A hostile probe's findings on POST /upload

let t: TestApp
let user: string
beforeAll(async () => {
  t = await makeTestApp({ env: { UPLOAD_MAX_BYTES: '4096' } })
  user = await t.userToken()
})
afterAll(() => t.close())

function form(bytes: Uint8Array, name: string, purpose = 'attachment') {
  const f = new FormData()
  f.append('file', new File([bytes as Uint8Array<ArrayBuffer>], name))
  f.append('purpose', purpose)
  return f
}
const upload = (bytes: Uint8Array, name: string, purpose?: string) =>
  t.request('POST', '/upload', { token: user, form: form(bytes, name, purpose) })

describe('a name longer than 255 characters', () => {
  test('keeps its extension: a valid .png is accepted, and the name shown back ends in it', async () => {
    for (const purpose of ['attachment', 'account_avatar']) {
      const r = await upload(F.PNG, `${'x'.repeat(400)}.png`, purpose)
      expect(r.status).toBe(200)
      const file = r.json.files[0]
      expect(file.extension).toBe('png')
      expect(file.content_type).toBe('image/png')
      expect(file.original_name).toHaveLength(255)
      expect(file.original_name).toEndWith('.png')
      expect(r.json.file_name).toEndWith('.png')
    }
    // the path goes before the length is counted; the extension is the name's own
    const r = await upload(F.PNG, `../dir/${'y'.repeat(300)}.PNG`)
    expect(r.status).toBe(200)
    expect(r.json.files[0].extension).toBe('png')
    expect(r.json.files[0].original_name).toBe(`${'y'.repeat(251)}.PNG`)
  })

  test('is still refused for an extension not allowed, or none', async () => {
    const exe = await upload(F.PNG, `${'x'.repeat(400)}.exe`)
    expect(exe.status).toBe(400)
    expect(exe.json.message).toContain('extension .exe is not allowed')
    const none = await upload(F.PNG, 'x'.repeat(400))
    expect(none.status).toBe(400)
    expect(none.json.message).toContain('extension .(none) is not allowed')
    // a .png past the 255th character of a name with another extension before it is the name's extension
    const hidden = await upload(F.PNG, `${'x'.repeat(250)}.txt${'z'.repeat(100)}.png`)
    expect(hidden.status).toBe(200)
    expect(hidden.json.files[0].extension).toBe('png')
  })
})

describe('GET /upload/list', () => {
  // the probe's finding: the list stopped at the newest 500, so older uploads could not be found
  test('pages through every upload with its cursor: none repeated or hidden by one made between pages', async () => {
    const staff = await t.staffToken()
    const up = (i: number) =>
      t.request('POST', '/upload', { token: staff, form: form(F.PNG, `page-${i}.png`) })
    const made: string[] = []
    for (let i = 0; i < 5; i++) made.push((await up(i)).json.file_id)
    const list = (q: string) => t.request('GET', `/upload/list?purpose=attachment&${q}`, { token: staff })
    const seen: string[] = []
    let page = await list('limit=2')
    expect(page.json.rows).toHaveLength(2)
    seen.push(...page.json.rows.map((r: { uuid: string }) => r.uuid))
    // a new upload between pages: the next pages go on after the last row seen
    made.push((await up(5)).json.file_id)
    while (page.json.next_cursor) {
      page = await list(`limit=2&cursor=${encodeURIComponent(page.json.next_cursor)}`)
      expect(page.status).toBe(200)
      seen.push(...page.json.rows.map((r: { uuid: string }) => r.uuid))
    }
    expect(new Set(seen).size).toBe(seen.length)
    expect(seen.sort()).toEqual(made.slice(0, 5).sort())
    // the first page now starts with the newest
    expect((await list('limit=1')).json.rows[0].uuid).toBe(made[5])
    for (const bad of ['cursor=abc', 'cursor=1.x', 'limit=0', 'limit=501']) {
      const r = await list(bad)
      expect([bad, r.status, r.json.error]).toEqual([bad, 400, 'INVALID_DATA'])
    }
  })
})
