/** A typed name for something one module offers the others (its API, or an extension point it reads). */
export interface PortKey<T> {
  readonly name: string
  /** Carries the type only. */
  readonly __type?: T
}

export const definePort = <T>(name: string): PortKey<T> => ({ name })

/**
 * What modules offer each other. Modules are set up in list order: a module takes the ports of the modules
 * before it at once (`get`); an extension point that a later module fills (e.g. accounts reading the
 * exposure of positions from trading) is read when used (`lazy`).
 */
export class Ports {
  private readonly values = new Map<string, unknown>()

  provide<T>(key: PortKey<T>, value: T): T {
    if (this.values.has(key.name)) throw new Error(`port ${key.name} is provided twice`)
    this.values.set(key.name, value)
    return value
  }

  get<T>(key: PortKey<T>): T {
    if (!this.values.has(key.name))
      throw new Error(`port ${key.name} is not provided (is its module listed before this one?)`)
    return this.values.get(key.name) as T
  }

  has(key: PortKey<unknown>) {
    return this.values.has(key.name)
  }

  lazy<T>(key: PortKey<T>): () => T {
    let value: T | undefined
    return () => {
      value ??= this.get(key)
      return value
    }
  }
}
