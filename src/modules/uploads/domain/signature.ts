import { XMLParser, XMLValidator } from 'fast-xml-parser'
import { fileTypeFromBuffer } from 'file-type'
import { ACTIVE_MARKUP } from './markup'
import { checkPdf, PDF_DECODE_CEILING } from './pdf'

export const AVATAR_EXTENSIONS = ['png', 'jpg', 'jpeg', 'webp', 'gif'] as const
export const GENERAL_EXTENSIONS = [
  'png',
  'jpg',
  'jpeg',
  'gif',
  'webp',
  'svg',
  'ico',
  'pdf',
  'txt',
  'csv',
  'doc',
  'docx',
  'xls',
  'xlsx',
] as const

/** The format file-type must recognize in the content for each allowed extension. */
const BINARY_SIGNATURE: Record<string, { ext: string; mime: string }> = {
  png: { ext: 'png', mime: 'image/png' },
  jpg: { ext: 'jpg', mime: 'image/jpeg' },
  jpeg: { ext: 'jpg', mime: 'image/jpeg' },
  gif: { ext: 'gif', mime: 'image/gif' },
  webp: { ext: 'webp', mime: 'image/webp' },
  ico: { ext: 'ico', mime: 'image/x-icon' },
  pdf: { ext: 'pdf', mime: 'application/pdf' },
  doc: { ext: 'cfb', mime: 'application/msword' },
  xls: { ext: 'cfb', mime: 'application/vnd.ms-excel' },
  docx: { ext: 'docx', mime: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' },
  xlsx: { ext: 'xlsx', mime: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' },
}

/**
 * In an SVG, after character references are decoded: elements that run or embed code under any namespace
 * prefix (a prefix bound to the SVG namespace runs `<x:script>` as a script; XML names may hold any
 * letter), event handler attributes, script URLs, whitespace inside them included (a URL parser drops
 * tabs and newlines), and stylesheets brought in by a processing instruction.
 */
const SVG_ACTIVE =
  /<\s*([^\s<>:=/'"!?]+:)?(script|foreignObject|iframe|embed|object|handler|listener)\b|\s([^\s<>:=/'"]+:)?on[a-z]+\s*=|j\s*a\s*v\s*a\s*s\s*c\s*r\s*i\s*p\s*t\s*:|data\s*:\s*text\/html|<\?\s*xml-stylesheet\b/i

/** Numeric character references decoded (`&#106;`, `&#x69;`), as an XML parser reads attribute values. */
const decodeCharRefs = (text: string) =>
  text.replace(/&#(x[0-9a-f]+|[0-9]+);/gi, (ref, n: string) => {
    const code = n[0] === 'x' || n[0] === 'X' ? Number.parseInt(n.slice(1), 16) : Number(n)
    return code <= 0x10ffff ? String.fromCodePoint(code) : ref
  })

type Verdict = { ok: true; signature: string; contentType: string } | { ok: false; reason: string }

export function extensionOf(name: string): string {
  const dot = name.lastIndexOf('.')
  return dot === -1 ? '' : name.slice(dot + 1).toLowerCase()
}

function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    return null
  }
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: detecting control characters is the point
const CONTROL = /[\u0000-\u0008\u000B\u000E-\u001F\u007F]/

function checkText(bytes: Uint8Array, ext: 'txt' | 'csv'): Verdict {
  const text = decodeUtf8(bytes)
  if (text === null) return { ok: false, reason: 'not valid UTF-8 text' }
  if (CONTROL.test(text)) return { ok: false, reason: 'binary content in a text file' }
  if (ACTIVE_MARKUP.test(text)) return { ok: false, reason: 'text contains active markup' }
  return {
    ok: true,
    signature: ext,
    contentType: ext === 'csv' ? 'text/csv; charset=utf-8' : 'text/plain; charset=utf-8',
  }
}

function checkSvg(bytes: Uint8Array): Verdict {
  const text = decodeUtf8(bytes)
  if (text === null) return { ok: false, reason: 'not valid UTF-8 XML' }
  if (XMLValidator.validate(text) !== true) return { ok: false, reason: 'not well-formed XML' }
  const doc = new XMLParser({ ignoreAttributes: true, ignoreDeclaration: true, ignorePiTags: true }).parse(
    text,
  )
  const roots = Object.keys(doc).filter((k) => !k.startsWith('#') && !k.startsWith('?') && !k.startsWith('!'))
  if (roots.length !== 1 || roots[0] !== 'svg') return { ok: false, reason: 'the XML root is not <svg>' }
  if (SVG_ACTIVE.test(decodeCharRefs(text)) || /<!ENTITY/i.test(text))
    return { ok: false, reason: 'SVG contains active content' }
  return { ok: true, signature: 'svg', contentType: 'image/svg+xml' }
}

/**
 * Decides from the content, never from the name alone, whether `bytes` are a file of extension `ext`
 * (pure; async only because file-type is). A PDF's streams are decoded to be checked, at most
 * `pdfDecodeBudget` bytes of them (domain/pdf.ts).
 */
export async function inspect(
  bytes: Uint8Array,
  ext: string,
  { pdfDecodeBudget = PDF_DECODE_CEILING }: { pdfDecodeBudget?: number } = {},
): Promise<Verdict> {
  if (bytes.length === 0) return { ok: false, reason: 'the file is empty' }
  if (ext === 'txt' || ext === 'csv') return checkText(bytes, ext)
  if (ext === 'svg') return checkSvg(bytes)
  const want = BINARY_SIGNATURE[ext]
  if (!want) return { ok: false, reason: `extension .${ext} is not allowed` }
  const found = await fileTypeFromBuffer(bytes)
  if (!found || found.ext !== want.ext)
    return { ok: false, reason: `content is ${found ? found.ext : 'unrecognized'}, not .${ext}` }
  const latin1 = new TextDecoder('latin1').decode(bytes)
  if (ACTIVE_MARKUP.test(latin1)) return { ok: false, reason: 'file embeds active markup (polyglot)' }
  if (ext === 'pdf') {
    const pdf = checkPdf(bytes, pdfDecodeBudget)
    if (!pdf.ok) return pdf
  }
  return { ok: true, signature: want.ext, contentType: want.mime }
}

const MAX_NAME = 255

/** The base name of what a client sent, without control or path characters (not trimmed). */
function baseName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? ''
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
  return base.replace(/[\u0000-\u001F\u007F"<>]/g, '')
}

/**
 * The original name as shown back: base name only, no control or path characters, at most 255 chars;
 * a longer one loses the end of its stem, not its extension.
 */
export function cleanOriginalName(name: string): string {
  const base = baseName(name)
  if (base.length <= MAX_NAME) return base || 'file'
  const ext = extensionOf(base)
  const tail = ext && ext.length <= 16 ? base.slice(base.length - ext.length - 1) : ''
  // no half of a surrogate pair left at the cut
  return base.slice(0, MAX_NAME - tail.length).replace(/[\uD800-\uDBFF]$/, '') + tail
}

/** The extension of the name a client sent, read before the name is trimmed (a long name keeps its own). */
export function uploadExtension(name: string): string {
  return extensionOf(baseName(name))
}
