// The brands' landing pages as the Workers bundle imports them (wrangler.toml [[rules]] Text: a string;
// bun-types calls an .html import an HTMLBundle, so worker-assets.ts casts).
declare module '*.html' {
  const text: string
  export default text
}
declare module '*.svg' {
  const text: string
  export default text
}
declare module '*/dist/bundle.js' {
  const text: string
  export default text
}
declare module '*/dist/bundle.css' {
  const text: string
  export default text
}
