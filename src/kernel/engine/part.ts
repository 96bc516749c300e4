import type { ChannelHandler } from '../bus/channel'

/** What a module does while its instance holds the engine role (ModuleParts.engine). */
export interface EnginePart {
  load?(): Promise<void>
  unload?(): void
  /** Each with its channel's type (onChannel). */
  // any: a module's handlers listen to channels of several types
  handlers?: ChannelHandler<any>[]
  settle?(): Promise<void>
}
