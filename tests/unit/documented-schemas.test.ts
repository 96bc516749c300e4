import { describe, expect, test } from 'bun:test'
import { Value } from '@sinclair/typebox/value'
import { z } from 'zod'
import { DEFAULT_SETTINGS, KycSettings } from '../../src/modules/kyc/domain/settings'
import { Settings, SettingsInput } from '../../src/modules/kyc/route-schemas'
import { PhaseRules } from '../../src/modules/prop/domain/rules'
import { Program, ProgramBody } from '../../src/modules/prop/route-schemas'

// The OpenAPI document shows the KYC settings and a prop phase's rules field by field with TypeBox
// schemas (tests/integration/openapi-opaque.test.ts), while the zod schemas of their domain/ stay the
// authority that checks them. Here the two are kept in step: the same fields, the same required ones,
// the same bounds, patterns and values, for what a save accepts (zod's input) and what is answered
// (zod's output, its defaults filled in).

type Json = Record<string, any>
/** The keywords that say what a value may be (descriptions, defaults and titles aside). */
const BOUNDS = [
  'type',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
] as const

/** Where the documented schema `doc` differs from the zod one `zod` (JSON Schema of either), as paths. */
function differences(doc: Json, zod: Json, at = '$'): string[] {
  const out: string[] = []
  if (zod.enum || doc.enum) {
    const values = (o: Json) => JSON.stringify([...(o.enum ?? [])].sort())
    if (values(doc) !== values(zod)) out.push(`${at}: values ${values(doc)} vs ${values(zod)}`)
  } else
    for (const k of BOUNDS)
      if (doc[k] !== zod[k]) out.push(`${at}.${k}: ${JSON.stringify(doc[k])} vs ${JSON.stringify(zod[k])}`)
  if (zod.properties) {
    const keys = (o: Json) => Object.keys(o.properties ?? {}).sort()
    if (JSON.stringify(keys(doc)) !== JSON.stringify(keys(zod)))
      out.push(`${at}: fields ${keys(doc).join(',')} vs ${keys(zod).join(',')}`)
    const req = (o: Json) => [...(o.required ?? [])].sort().join(',')
    if (req(doc) !== req(zod)) out.push(`${at}: required ${req(doc)} vs ${req(zod)}`)
    for (const k of Object.keys(zod.properties))
      if (doc.properties?.[k]) out.push(...differences(doc.properties[k], zod.properties[k], `${at}.${k}`))
  }
  if (zod.items) out.push(...differences(doc.items ?? {}, zod.items, `${at}[]`))
  // a map: zod's propertyNames pattern is TypeBox's patternProperties key
  if (zod.propertyNames) {
    const [[pattern, values]] = Object.entries<Json>(doc.patternProperties ?? { '': {} })
    if (pattern !== zod.propertyNames.pattern)
      out.push(`${at}: keys ${pattern} vs ${zod.propertyNames.pattern}`)
    out.push(...differences(values, zod.additionalProperties, `${at}{}`))
  }
  return out
}

/** A TypeBox schema as plain JSON Schema (its symbols and undefined options dropped). */
const plain = (s: unknown) => JSON.parse(JSON.stringify(s)) as Json

describe('the documented KYC settings are those domain/settings.ts checks', () => {
  test('what a save accepts', () => {
    expect(differences(plain(SettingsInput), z.toJSONSchema(KycSettings, { io: 'input' }) as Json)).toEqual(
      [],
    )
  })
  test('what is stored and answered', () => {
    expect(differences(plain(Settings), z.toJSONSchema(KycSettings, { io: 'output' }) as Json)).toEqual([])
  })
  test('the default settings pass both documented schemas (the PUT example and the GET answer)', () => {
    expect(Value.Check(SettingsInput, DEFAULT_SETTINGS)).toBe(true)
    expect(Value.Check(Settings, DEFAULT_SETTINGS)).toBe(true)
  })
})

describe('the documented prop phase rules are those domain/rules.ts checks', () => {
  const rules = (o: Json) => o.properties.steps.items.properties.rules
  test('what a program save accepts', () => {
    expect(
      differences(plain(rules(ProgramBody)), z.toJSONSchema(PhaseRules, { io: 'input' }) as Json),
    ).toEqual([])
  })
  test('what a program and a phase answer', () => {
    expect(differences(plain(rules(Program)), z.toJSONSchema(PhaseRules, { io: 'output' }) as Json)).toEqual(
      [],
    )
  })
})
