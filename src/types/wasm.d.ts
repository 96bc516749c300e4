// A .wasm import is a compiled module (wrangler's default rule for the Workers entry).
declare module '*.wasm' {
  const module: WebAssembly.Module
  export default module
}
