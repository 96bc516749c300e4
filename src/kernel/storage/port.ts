/** File storage port: local disk on the server, R2 at the edge. Keys are generated names, never user input. */
export interface FileStorage {
  /**
   * Which store holds the bytes (`disk`, `r2`): recorded with what refers to them, so a process that shares
   * a database with another kind of store (the engine in Bun beside Workers) leaves the other's files alone.
   */
  readonly kind: string
  put(key: string, data: Uint8Array, contentType: string): Promise<void>
  get(key: string): Promise<Uint8Array | null>
  delete(key: string): Promise<void>
  /** Deletes several at once (R2: one call for up to 1,000 keys, a single subrequest at the edge). */
  deleteMany(keys: readonly string[]): Promise<void>
  /** Whether the store holds the key (a row from before `kind` was recorded: whose are its bytes). */
  has(key: string): Promise<boolean>
}
