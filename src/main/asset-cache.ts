/**
 * How long a browser keeps a static asset: a brand's pages and the affiliate cabinet change with a deploy
 * under the same URL (five minutes), Swagger UI's files only with its package (a day). One policy for the
 * Bun server and the edge.
 */
export const assetCacheControl = (name: string) =>
  name.startsWith('site/') || name.startsWith('cabinet/') ? 'public, max-age=300' : 'public, max-age=86400'
