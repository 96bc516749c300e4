/**
 * Crawlers, link previews and scripted clients by user agent (the patterns dub and Matomo's device
 * detector agree on). A bot's touch is recorded as such and never wins. An empty agent is a script.
 */
const BOT =
  /bot\b|bot\/|crawl|spider|slurp|mediapartners|facebookexternalhit|embedly|preview|whatsapp|telegram|discord|skype|bingpreview|curl\/|wget\/|python-requests|python-urllib|go-http-client|java\/|okhttp|axios\/|node-fetch|libwww|httpclient|scrapy|headlesschrome|phantomjs|lighthouse|pingdom|uptime/i

export const isBot = (userAgent: string | null) => !userAgent || BOT.test(userAgent)
