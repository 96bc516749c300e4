/**
 * What a module's rules refuse, without HTTP (issue 42): a service throws `refuse(kind, message)`, naming
 * a kind of its module's table; the table says, once, the stable code and the HTTP status each kind is
 * answered with. The HTTP edge maps a refusal by its table (kernel/http), the document lists a route's
 * refusals from the same table (`responses`), and other modules read the kind and code through ports.
 */

/** A kind's answer: the stable code clients see and the HTTP status the edge gives it. */
interface RefusalAnswer {
  status: number
  code: string
}

type RefusalTable = Record<string, RefusalAnswer>

/** A refusal of one kind of a module's table, with a message for people. */
export class Refusal extends Error {
  constructor(
    readonly table: RefusalTable,
    readonly kind: string,
    message: string,
  ) {
    super(message)
    this.name = 'Refusal'
  }

  get code(): string {
    return this.table[this.kind]!.code
  }

  get status(): number {
    return this.table[this.kind]!.status
  }
}

/** Error answers of a route by status, merged (codes once each): a module's refusals and the kernel's. */
export function mergeResponses(...tables: Record<number, readonly string[]>[]): Record<number, string[]> {
  const out: Record<number, string[]> = {}
  for (const t of tables)
    for (const [status, codes] of Object.entries(t)) {
      const list = out[Number(status)] ?? []
      for (const c of codes) if (!list.includes(c)) list.push(c)
      out[Number(status)] = list
    }
  return out
}

/** A module's refusals: throw one of its kinds; list a route's error answers from the same table. */
export function refusals<const T extends RefusalTable>(table: T) {
  return {
    table,
    refuse: (kind: keyof T & string, message: string) => new Refusal(table, kind, message),
    /** The error answers of a route that may refuse these kinds: codes grouped by status. */
    responses(...kinds: (keyof T & string)[]): Record<number, string[]> {
      const out: Record<number, string[]> = {}
      for (const k of kinds) {
        const { status, code } = table[k]!
        const list = out[status] ?? []
        if (!list.includes(code)) list.push(code)
        out[status] = list
      }
      return out
    },
  }
}

/**
 * The refusals of a module whose codes each mean one thing: each code is its own kind, answered with the
 * status given here.
 */
export function codeRefusals<const T extends Record<string, number>>(codes: T) {
  const table = Object.fromEntries(Object.entries(codes).map(([code, status]) => [code, { status, code }]))
  return refusals(table as { [C in keyof T & string]: { status: T[C]; code: C } })
}
