/** File storage port: local disk on the server, R2 at the edge. Keys are generated names, never user input. */
export interface FileStorage {
  put(key: string, data: Uint8Array, contentType: string): Promise<void>
  get(key: string): Promise<Uint8Array | null>
  delete(key: string): Promise<void>
}
