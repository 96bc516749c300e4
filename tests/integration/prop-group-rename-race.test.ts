// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type AccountsApi, AccountsPort } from '../../src/modules/accounts'
import { PropPort } from '../../src/modules/prop'
import type { PropCtx } from '../../src/modules/prop/context'
import { createProgram, updateProgram } from '../../src/modules/prop/programs'
import { makeTestApp, type TestApp } from '../support/app'

/**
 * A prop program names its steps' groups; a group rename is refused (409 GROUP_IN_USE) while a program
 * names the group, checked in the rename's transaction. The program's save looks its groups up in its own
 * write transaction, so a rename committing between the lookup and the write cannot leave a program
 * naming a group that no longer exists (purchases of it would answer 400 INVALID_DEMO_GROUP).
 */

let t: TestApp
let manager: string
beforeAll(async () => {
  t = await makeTestApp()
  manager = await t.staffToken()
})
afterAll(() => t.close())

const rules = { profit_target_pct: 10, daily_loss_pct: 5, total_loss_pct: 10 }
const program = (name: string, group: string) => ({
  name,
  price: 0,
  currency: 'USD',
  active: true,
  time_zone: 'Europe/Prague',
  limits: {},
  steps: [{ account_group: group, phase_type: 0, rules }],
})

async function newGroup(name: string) {
  const r = await t.request('POST', '/manager/groups', {
    token: manager,
    body: { name, account_mode: 'DEMO', currency: 'USD', leverage: 100, default_deposit: 10000 },
  })
  expect(r.status).toBe(200)
  return r.json.id as number
}

const rename = (id: number, name: string) =>
  t.request('PATCH', `/manager/groups/${id}`, { token: manager, body: { name } })

const groupNames = async () =>
  new Set(
    ((await t.request('GET', '/manager/groups', { token: manager })).json.rows as { name: string }[]).map(
      (g) => g.name,
    ),
  )

/**
 * Prop's context whose group lookup, once it found `name`, renames that group (through the route) and
 * waits for the rename up to 300 ms: the window between the lookup and the program's write. Where the
 * lookup is in the write transaction the rename waits for it (one writer), and runs after the write.
 */
function racingCtx(name: string, groupId: number, renamed: string) {
  const accounts = t.ports.get(AccountsPort)
  const race: { rename?: Promise<{ status: number; json: any }> } = {}
  const findGroup: AccountsApi['findGroup'] = async (brandId, n, q) => {
    const g = await accounts.findGroup(brandId, n, q)
    if (g && n === name && !race.rename) {
      race.rename = rename(groupId, renamed)
      await Promise.race([race.rename, new Promise((r) => setTimeout(r, 300))])
    }
    return g
  }
  const ctx = {
    ...t.ctx,
    accounts: { ...accounts, findGroup },
    steps: t.ports.get(PropPort).steps,
  } as unknown as PropCtx
  return { ctx, race }
}

describe('a prop program saved while its group is renamed', () => {
  test('create: a rename started between the lookup and the write waits for the write, then is refused (409)', async () => {
    const id = await newGroup('race\\create\\USD')
    const { ctx, race } = racingCtx('race\\create\\USD', id, 'race\\create-renamed\\USD')
    const saved = await createProgram(ctx, 1, program('Race create', 'race\\create\\USD'))
    expect(saved.steps[0]!.account_group).toBe('race\\create\\USD')
    // not both: a program naming a group that is gone
    const renamed = await race.rename!
    const names = await groupNames()
    expect({ status: renamed.status, error: renamed.json.error }).toEqual({
      status: 409,
      error: 'GROUP_IN_USE',
    })
    expect(names.has('race\\create\\USD')).toBe(true)
    expect(names.has('race\\create-renamed\\USD')).toBe(false)
  })

  test('update: the same for a program replaced to name another group (its version goes up by one)', async () => {
    await newGroup('race\\update-a\\USD')
    const b = await newGroup('race\\update-b\\USD')
    const created = await t.request('POST', '/manager/prop/programs', {
      token: manager,
      body: program('Race update', 'race\\update-a\\USD'),
    })
    expect(created.status).toBe(200)
    const { ctx, race } = racingCtx('race\\update-b\\USD', b, 'race\\update-b-renamed\\USD')
    const saved = await updateProgram(ctx, 1, created.json.id, program('Race update', 'race\\update-b\\USD'))
    expect(saved.version).toBe(created.json.version + 1)
    expect(saved.steps[0]!.account_group).toBe('race\\update-b\\USD')
    const renamed = await race.rename!
    expect({ status: renamed.status, error: renamed.json.error }).toEqual({
      status: 409,
      error: 'GROUP_IN_USE',
    })
    expect((await groupNames()).has('race\\update-b\\USD')).toBe(true)
  })

  test('a rename committed before the save is seen: the program naming the old name is refused (400 naming the field)', async () => {
    const id = await newGroup('race\\before\\USD')
    expect((await rename(id, 'race\\before-renamed\\USD')).status).toBe(200)
    const r = await t.request('POST', '/manager/prop/programs', {
      token: manager,
      body: program('Race before', 'race\\before\\USD'),
    })
    expect(r.status).toBe(400)
    expect(r.json.error).toBe('INVALID_DATA')
    expect(r.json.message).toContain('steps.0.account_group: group race\\before\\USD not found')
    const ok = await t.request('POST', '/manager/prop/programs', {
      token: manager,
      body: program('Race before', 'race\\before-renamed\\USD'),
    })
    expect(ok.status).toBe(200)
    const upd = await t.request('PUT', `/manager/prop/programs/${ok.json.id}`, {
      token: manager,
      body: program('Race before', 'race\\before\\USD'),
    })
    expect({ status: upd.status, error: upd.json.error }).toEqual({ status: 400, error: 'INVALID_DATA' })
  })
})
