/** Markup that makes a file dangerous when a browser sniffs it (polyglots, disguised pages, script URLs). */
export const ACTIVE_MARKUP =
  /<\s*(script|html|body|iframe|object|embed|svg|\?php)\b|<!doctype\s+html|javascript:/i
