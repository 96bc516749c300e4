/**
 * Crawlers, link previews and scripted clients by user agent (the patterns dub and Matomo's device
 * detector agree on). A bot's touch is recorded as such and never wins. An empty agent is a script.
 */
const BOT =
  /bot\b|bot\/|crawl|spider|slurp|mediapartners|facebookexternalhit|embedly|preview|whatsapp|telegram|discord|skype|bingpreview|curl\/|wget\/|python-requests|python-urllib|go-http-client|java\/|okhttp|axios\/|node-fetch|libwww|httpclient|scrapy|headlesschrome|phantomjs|lighthouse|pingdom|uptime/i

export const isBot = (userAgent: string | null) => !userAgent || BOT.test(userAgent)

/** Crawlers and link previews: what no app is, whatever HTTP library it reports itself with. */
const CRAWLER =
  /bot\b|bot\/|crawl|spider|slurp|mediapartners|facebookexternalhit|embedly|preview|bingpreview|headlesschrome|phantomjs|lighthouse|pingdom|uptime/i

/**
 * An install is reported by an app, not a browser: its agent is its HTTP library (okhttp on Android and
 * React Native, CFNetwork on iOS, Dart, Ktor...). A registration's body values are posted by the broker's
 * page, its app or its back end (node-fetch, curl...). For these, only a crawler's agent makes a bot.
 */
export const isCrawler = (userAgent: string | null) => !!userAgent && CRAWLER.test(userAgent)
