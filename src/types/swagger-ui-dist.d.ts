declare module 'swagger-ui-dist' {
  export function getAbsoluteFSPath(): string
}

// imported by the Workers entry as text and bytes (wrangler.toml [[rules]])
declare module 'swagger-ui-dist/swagger-ui-bundle.js' {
  const text: string
  export default text
}
declare module 'swagger-ui-dist/swagger-ui.css' {
  const text: string
  export default text
}
declare module 'swagger-ui-dist/favicon-32x32.png' {
  const bytes: ArrayBuffer
  export default bytes
}
