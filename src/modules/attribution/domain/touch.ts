import type { Params } from './params'

/** A touch on its way to the database. */
export interface NewTouch {
  brandId: number
  visitorId: string | null
  installationId: string | null
  source: 'page' | 'click' | 'install' | 'registration'
  affiliateId: number | null
  linkId: number | null
  params: Params
  bot: boolean
  ipHash: string
  userAgent: string
  landingPath: string
  referrer: string
  createdAt: number
}

/** Where landing hits put their touches. */
export interface TouchSink {
  submit(t: NewTouch): Promise<unknown>
  /** Writes what is held (before a registration weighs the visitor's touches; at shutdown). */
  flush(): Promise<void>
}
