/**
 * A path a browser keeps on the host it is on: one slash first, then neither a slash nor a backslash
 * (`//evil.example` and `/\evil.example` are another host to a browser). For redirects to stored paths.
 */
export const isSameHostPath = (path: string) => path.startsWith('/') && path[1] !== '/' && path[1] !== '\\'
