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
  /** A click that repeats its visitor's click on the link within the hour (counted raw, not unique). */
  repeat?: boolean
  /** Suspected fraud (rate or agent rotation of its address): kept, out of the funnel. */
  suspect?: boolean
  ipHash: string
  userAgent: string
  landingPath: string
  referrer: string
  /** ISO 3166-1 alpha-2 from the edge (`cf-ipcountry`); '' when unknown */
  country?: string
  createdAt: number
}

/** Where landing hits put their touches. */
export interface TouchSink {
  submit(t: NewTouch): Promise<unknown>
  /** Writes what is held (before a registration weighs the visitor's touches; at shutdown). */
  flush(): Promise<void>
}
