import { inflateSync } from 'node:zlib'
import { ACTIVE_MARKUP } from './markup'

/**
 * Whether a PDF can act when opened (pure). A PDF name may spell any byte as `#xx` (ISO 32000-1 7.3.5) and
 * objects may sit compressed in object streams, so the names are decoded and the streams' filters undone
 * (within a budget) before anything is matched; what cannot be decoded within it is refused, not trusted.
 */

/** The most decoded bytes one PDF may cost, over all its streams (node:zlib stops at it). */
export const PDF_DECODE_CEILING = 20 * 1024 * 1024
/** The most filtered streams one PDF may have decoded. */
export const PDF_MAX_STREAMS = 5000

export const PDF_ACTIVE_REASON = 'PDF contains active content'
export const PDF_ENCRYPTED_REASON = 'PDF is encrypted: its content cannot be checked'
export const PDF_UNVERIFIABLE_REASON = 'PDF has content that cannot be checked for active content'

/**
 * Names that run something, act on opening, or carry or send files: scripts (`/JS`, `/JavaScript`, a
 * /Names tree of them included), additional actions, launching, form submission and import, XFA forms,
 * embedded files and attachments, rich media (any `/RichMedia…`), 3D artwork (`/3DD`, the stream of a 3D
 * annotation, and `/OnInstantiate`, the script it runs). `/OpenAction` is refused unless it only
 * opens a page of the document ({@link opensAPage}).
 */
const ACTIVE_NAMES = new Set([
  'JavaScript',
  'JS',
  'AA',
  'Launch',
  'SubmitForm',
  'ImportData',
  'XFA',
  'EmbeddedFile',
  'EmbeddedFiles',
  'FileAttachment',
  'GoToE',
  '3DD',
  'OnInstantiate',
])
const isActiveName = (name: string) => ACTIVE_NAMES.has(name) || name.startsWith('RichMedia')

/** A regular character of PDF syntax: anything but white space and delimiters (7.2.2). */
const REGULAR = '[^\\x00\\t\\n\\f\\r ()<>[\\]{}/%]'
const REGULAR_NOT_HASH = '[^\\x00\\t\\n\\f\\r ()<>[\\]{}/%#]'
/**
 * Names that may be active, `/OpenAction` or `/Encrypt`: spelled plainly, or with any `#xx` escape (decoded,
 * then checked).
 */
const CANDIDATE = new RegExp(
  `/(?:${REGULAR_NOT_HASH}*#${REGULAR}*|(?:${[...ACTIVE_NAMES, 'OpenAction', 'Encrypt', `RichMedia${REGULAR}*`].join('|')})(?!${REGULAR}))`,
  'g',
)
const hexValue = (c: number) =>
  c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x41 && c <= 0x46 ? c - 55 : c >= 0x61 && c <= 0x66 ? c - 87 : -1

/** A name's `#xx` escapes decoded (a `#` not followed by two hex digits stays, as readers keep it). */
function decodeName(raw: string): string {
  if (!raw.includes('#')) return raw
  let name = ''
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i)
    const high = c === 0x23 ? hexValue(raw.charCodeAt(i + 1)) : -1
    const low = high === -1 ? -1 : hexValue(raw.charCodeAt(i + 2))
    if (low === -1) name += raw[i]
    else {
      name += String.fromCharCode((high << 4) | low)
      i += 2
    }
  }
  return name
}

/**
 * The names in `text` that may be active, `/OpenAction` or `/Encrypt`, `#xx` escapes decoded as a reader
 * decodes them: those spelled plainly and every name with an escape (the rest cannot be one of them). With
 * each, where it ends in `text`.
 */
function* namesIn(text: string): Generator<{ name: string; end: number }> {
  for (const m of text.matchAll(CANDIDATE))
    yield { name: decodeName(m[0].slice(1)), end: m.index + m[0].length }
}

const latin1 = (bytes: Uint8Array) => new TextDecoder('latin1').decode(bytes)
/** A short run of bytes as text (cheaper than a TextDecoder call for a token). */
function ascii(b: Uint8Array, from: number, to: number): string {
  let text = ''
  for (let i = from; i < to; i++) text += String.fromCharCode(b[i])
  return text
}

// --- a small lexer, enough to find every stream and its dictionary -------------------------------------

class PdfName {
  constructor(readonly name: string) {}
}
class PdfRef {
  constructor(
    readonly num: number,
    readonly gen: number,
  ) {}
}
type PdfValue = number | PdfName | PdfRef | PdfValue[] | Map<string, PdfValue> | null
/** A stream: its dictionary, its data as written, and where its dictionary begins in the file. */
type PdfStream = { dict: Map<string, PdfValue>; data: Uint8Array; at: number }

/** 1 white space, 2 delimiter (7.2.2). */
const CLASS = new Uint8Array(256)
for (const c of [0, 9, 10, 12, 13, 32]) CLASS[c] = 1
for (const c of '()<>[]{}/%') CLASS[c.charCodeAt(0)] = 2
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)$/
const ENDSTREAM = new TextEncoder().encode('endstream')

function bytesAt(b: Uint8Array, i: number, what: Uint8Array): boolean {
  if (i + what.length > b.length) return false
  for (let j = 0; j < what.length; j++) if (b[i + j] !== what[j]) return false
  return true
}

function indexOfBytes(b: Uint8Array, what: Uint8Array, from: number): number {
  for (let i = b.indexOf(what[0], from); i !== -1; i = b.indexOf(what[0], i + 1))
    if (bytesAt(b, i, what)) return i
  return -1
}

function skipWhite(b: Uint8Array, i: number): number {
  while (i < b.length && CLASS[b[i]] === 1) i++
  return i
}

class Unverifiable extends Error {}

/** Token kinds. */
const T_NONE = 0 // white space, a comment, a string, a stray delimiter
const T_DICT = 1
const T_DICT_END = 2
const T_ARRAY = 3
const T_ARRAY_END = 4
const T_NAME = 5
const T_WORD = 6
/** Where the token last read by {@link token} ends. */
let tokenEnd = 0

/** The kind of the token at `i` (its end in `tokenEnd`): strings with nested parentheses and escapes skipped. */
function token(b: Uint8Array, i: number): number {
  const n = b.length
  const c = b[i]
  let j = i + 1
  let kind = T_NONE
  if (CLASS[c] === 1) {
    while (j < n && CLASS[b[j]] === 1) j++
  } else if (c === 0x25) {
    while (j < n && b[j] !== 10 && b[j] !== 13) j++
  } else if (c === 0x28) {
    let depth = 1
    while (j < n && depth > 0) {
      if (b[j] === 0x5c) j++
      else if (b[j] === 0x28) depth++
      else if (b[j] === 0x29) depth--
      j++
    }
  } else if (c === 0x3c && b[j] === 0x3c) {
    j++
    kind = T_DICT
  } else if (c === 0x3c) {
    while (j < n && b[j] !== 0x3e) j++
    j++
  } else if (c === 0x3e && b[j] === 0x3e) {
    j++
    kind = T_DICT_END
  } else if (c === 0x5b) kind = T_ARRAY
  else if (c === 0x5d) kind = T_ARRAY_END
  else if (c === 0x2f) {
    while (j < n && CLASS[b[j]] === 0) j++
    kind = T_NAME
  } else if (CLASS[c] === 0) {
    while (j < n && CLASS[b[j]] === 0) j++
    kind = T_WORD
  }
  tokenEnd = Math.min(j, n)
  return kind
}

const STREAM_WORD = new TextEncoder().encode('stream')
const isStreamWord = (b: Uint8Array, i: number, end: number) => end - i === 6 && bytesAt(b, i, STREAM_WORD)

/** The deepest nesting and the most values one dictionary may hold before the file is refused as unreadable. */
const MAX_DEPTH = 64
const MAX_VALUES = 100_000
/** The most streams of any kind one PDF may have (each costs a dictionary parse). */
const MAX_ALL_STREAMS = 4 * PDF_MAX_STREAMS

/** Dictionaries whose keys a reader may read otherwise: a key that is not a name, repeated, or without a value. */
const IRREGULAR = new WeakSet<Map<string, PdfValue>>()

/**
 * The first value written at `b[start, end)`, its containers as far as needed; at the top level `n g R` is
 * a reference.
 */
function parseValue(b: Uint8Array, start: number, end: number): PdfValue {
  const stack: { dict: boolean; items: PdfValue[] }[] = []
  /** Numbers at the top level that may begin a reference. */
  const numbers: number[] = []
  let values = 0
  for (let i = start; i < end; i = tokenEnd) {
    const kind = token(b, i)
    const top = stack.at(-1)
    let value: PdfValue | undefined
    if (kind === T_DICT || kind === T_ARRAY) {
      if (!top && numbers.length) return numbers[0]
      if (stack.length >= MAX_DEPTH) throw new Unverifiable('nested too deep')
      stack.push({ dict: kind === T_DICT, items: [] })
      continue
    }
    if (kind === T_DICT_END || kind === T_ARRAY_END) {
      if (!top || top.dict !== (kind === T_DICT_END)) throw new Unverifiable('unbalanced dictionary')
      stack.pop()
      if (top.dict) {
        const dict = new Map<string, PdfValue>()
        for (let k = 0; k + 1 < top.items.length; k += 2) {
          const key = top.items[k]
          if (!(key instanceof PdfName) || dict.has(key.name)) IRREGULAR.add(dict)
          if (key instanceof PdfName) dict.set(key.name, top.items[k + 1])
        }
        if (top.items.length % 2) IRREGULAR.add(dict)
        value = dict
      } else value = top.items
    } else if (kind === T_NAME)
      value = new PdfName(decodeName(ascii(b, i + 1, Math.min(tokenEnd, i + 1 + 256))))
    else if (kind === T_WORD) {
      const word = ascii(b, i, Math.min(tokenEnd, i + 32))
      if (NUMBER.test(word)) value = Number(word)
      else if (word === 'R' && !top && numbers.length === 2) return new PdfRef(numbers[0], numbers[1])
      else if (word === 'R' && top) {
        const [num, gen] = top.items.slice(-2)
        if (typeof num === 'number' && typeof gen === 'number') {
          top.items.splice(-2, 2, new PdfRef(num, gen))
          continue
        }
        value = null
      } else value = null
    } else if (i < end && (b[i] === 0x28 || b[i] === 0x3c))
      value = null // a string
    else continue
    const parent = stack.at(-1)
    if (!parent) {
      if (typeof value === 'number' && numbers.length < 2) {
        numbers.push(value)
        continue
      }
      return numbers.length ? numbers[0] : value
    }
    if (++values > MAX_VALUES) throw new Unverifiable('a dictionary too large')
    parent.items.push(value)
  }
  if (!stack.length && numbers.length) return numbers[0]
  throw new Unverifiable('unterminated value')
}

/** The dictionary written at `b[start, end)` (the bytes of a stream's dictionary). */
function parseDict(b: Uint8Array, start: number, end: number): Map<string, PdfValue> {
  const dict = parseValue(b, start, end)
  if (!(dict instanceof Map)) throw new Unverifiable('not a dictionary')
  return dict
}

/**
 * The streams of a PDF read front to back, as a reader rebuilding a damaged file does: each `stream` after
 * a dictionary, its data up to `/Length` when `endstream` follows it there, else up to the first
 * `endstream`. Also the offsets of the `stream` keywords it took as streams. Only the structure is
 * followed; a stream's dictionary is parsed when a stream follows it.
 */
function readStreams(b: Uint8Array): { streams: PdfStream[]; keywords: Set<number> } {
  const streams: PdfStream[] = []
  const keywords = new Set<number>()
  const n = b.length
  let depth = 0
  /** The last complete value at the top level, when a dictionary: where it begins and ends. */
  let dictStart = -1
  let dictEnd = -1
  let openedAt = -1
  let i = 0
  while (i < n) {
    const kind = token(b, i)
    const at = i
    i = tokenEnd
    if (kind === T_DICT || kind === T_ARRAY) {
      if (depth === 0) {
        openedAt = kind === T_DICT ? at : -1
        dictStart = -1
      }
      // deeper than a reader goes: cannot be read as a reader reads it
      if (++depth > MAX_DEPTH) throw new Unverifiable('nested too deep')
    } else if (kind === T_DICT_END || kind === T_ARRAY_END) {
      if (depth === 0) continue
      if (--depth === 0 && kind === T_DICT_END && openedAt !== -1) {
        dictStart = openedAt
        dictEnd = i
      }
    } else if (
      kind === T_NAME ||
      kind === T_WORD ||
      (kind === T_NONE && (b[at] === 0x28 || b[at] === 0x3c))
    ) {
      if (depth > 0) continue
      if (kind === T_WORD && dictStart !== -1 && isStreamWord(b, at, i)) {
        const dict = parseDict(b, dictStart, dictEnd)
        const dictAt = dictStart
        dictStart = -1
        // the data begins after the end of the keyword's line
        while (i < n && b[i] !== 10 && b[i] !== 13) i++
        if (b[i] === 13 && b[i + 1] === 10) i++
        const start = Math.min(i + 1, n)
        const length = dict.get('Length')
        let end = -1
        if (typeof length === 'number' && Number.isInteger(length) && length >= 0 && start + length <= n) {
          const after = skipWhite(b, start + length)
          if (bytesAt(b, after, ENDSTREAM)) {
            end = start + length
            i = after + ENDSTREAM.length
          }
        }
        if (end === -1) {
          const found = indexOfBytes(b, ENDSTREAM, start)
          end = found === -1 ? n : found
          i = found === -1 ? n : found + ENDSTREAM.length
        }
        if (streams.length >= MAX_ALL_STREAMS) throw new Unverifiable('too many streams')
        streams.push({ dict, data: b.subarray(start, end), at: dictAt })
        keywords.add(at)
      } else dictStart = -1
    }
  }
  return { streams, keywords }
}

const isEol = (c: number) => c === 10 || c === 13

/**
 * Where `stream` follows `>>` anywhere in the bytes (white space and comments between, a comment running to
 * its end of line): where a reader may see a stream. Read in one pass, as an automaton: at each byte, whether
 * a run of white space and comments after a `>>` is being read, and whether a comment inside one is, so no
 * byte is read more than a fixed number of times whatever the input (a search that backs off at each `>>`
 * re-reads the rest of the line each time). A `stream` after `>>` inside a comment counts too.
 */
function streamsAfterDicts(b: Uint8Array): number[] {
  const found: number[] = []
  const n = b.length
  /** After `>>`, in its white space and comments (`gap`), or in one of its comments (`comment`). */
  let gap = false
  let comment = false
  for (let i = 0; i < n; i++) {
    const c = b[i]
    const inGap = gap || (i >= 2 && b[i - 2] === 0x3e && b[i - 1] === 0x3e)
    const inComment: boolean = comment
    gap = inComment && isEol(c)
    comment = inComment && !isEol(c)
    if (inGap) {
      if (CLASS[c] === 1) gap = true
      else if (c === 0x25) comment = true
      else if (c === 0x73 && bytesAt(b, i, STREAM_WORD) && (i + 6 >= n || CLASS[b[i + 6]] !== 0))
        found.push(i)
    }
  }
  return found
}

// --- filters ------------------------------------------------------------------------------------------

/** What decoding may still spend, shared by all the streams of one file. */
type Budget = { bytes: number; streams: number }

function spend(budget: Budget, bytes: number) {
  budget.bytes -= bytes
  if (budget.bytes < 0) throw new Unverifiable('decode budget exceeded')
}

const IMAGE_FILTERS = new Set(['DCTDecode', 'DCT', 'JPXDecode', 'CCITTFaxDecode', 'CCF', 'JBIG2Decode'])

function inflate(data: Uint8Array, budget: Budget): Uint8Array {
  if (budget.bytes <= 0) throw new Unverifiable('decode budget exceeded')
  let out: Uint8Array
  try {
    // strict: a truncated or damaged stream throws, as does one that would pass the budget
    out = inflateSync(data, { maxOutputLength: budget.bytes })
  } catch {
    throw new Unverifiable('a stream does not inflate within the budget')
  }
  spend(budget, out.length)
  return out
}

function asciiHex(data: Uint8Array, budget: Budget): Uint8Array {
  // the size first, spent before anything is allocated
  let digits = 0
  let ended = false
  for (let i = 0; i < data.length && !ended; i++)
    if (data[i] === 0x3e) ended = true
    else if (hexValue(data[i]) !== -1) digits++
  if (!ended) throw new Unverifiable('ASCIIHexDecode data without its end')
  spend(budget, Math.ceil(digits / 2))
  const out = new Uint8Array(Math.ceil(digits / 2))
  let o = 0
  let high = -1
  for (let i = 0; i < data.length; i++) {
    const c = data[i]
    if (c === 0x3e) break
    const v = hexValue(c)
    if (v === -1) continue
    if (high === -1) high = v
    else {
      out[o++] = (high << 4) | v
      high = -1
    }
  }
  if (high !== -1) out[o++] = high << 4
  return out.subarray(0, o)
}

/** ASCII85 data decoded into `out`, or only measured when `out` is null: the number of bytes it decodes to. */
function ascii85Into(data: Uint8Array, out: Uint8Array | null): number {
  let o = 0
  let value = 0
  let count = 0
  let ended = false
  for (let i = 0; i < data.length; i++) {
    const c = data[i]
    if (CLASS[c] === 1) continue
    if (c === 0x7e) {
      ended = true
      break
    }
    if (c === 0x7a && count === 0) {
      o += 4
      continue
    }
    if (c < 33 || c > 117) throw new Unverifiable('invalid ASCII85Decode data')
    value = value * 85 + (c - 33)
    if (++count === 5) {
      if (out) for (let k = 0; k < 4; k++) out[o + k] = (value >>> (24 - 8 * k)) & 0xff
      o += 4
      value = 0
      count = 0
    }
  }
  if (!ended) throw new Unverifiable('ASCII85Decode data without its end')
  if (count > 1) {
    // a final partial group: padded with the highest digit, one byte fewer than its digits
    const digits = count
    while (count++ < 5) value = value * 85 + 84
    if (out) for (let k = 0; k < digits - 1; k++) out[o + k] = (value >>> (24 - 8 * k)) & 0xff
    o += digits - 1
  }
  return o
}

function ascii85(data: Uint8Array, budget: Budget): Uint8Array {
  // measured first, spent before anything is allocated (`z` makes one byte four)
  const size = ascii85Into(data, null)
  spend(budget, size)
  const out = new Uint8Array(size)
  ascii85Into(data, out)
  return out
}

function runLength(data: Uint8Array, budget: Budget): Uint8Array {
  const chunks: Uint8Array[] = []
  let i = 0
  let size = 0
  for (;;) {
    if (i >= data.length) throw new Unverifiable('RunLengthDecode data without its end')
    const len = data[i++]
    if (len === 128) break
    // spent before a run is allocated
    spend(budget, len < 128 ? len + 1 : 257 - len)
    const chunk = len < 128 ? data.subarray(i, i + len + 1) : new Uint8Array(257 - len).fill(data[i] ?? 0)
    if (len < 128 && chunk.length < len + 1) throw new Unverifiable('truncated RunLengthDecode data')
    i += len < 128 ? len + 1 : 1
    size += chunk.length
    chunks.push(chunk)
  }
  const out = new Uint8Array(size)
  let o = 0
  for (const chunk of chunks) {
    out.set(chunk, o)
    o += chunk.length
  }
  return out
}

const intParam = (parms: Map<string, PdfValue> | null, key: string, fallback: number) => {
  const v = parms?.get(key)
  if (v === undefined || v === null) return fallback
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new Unverifiable(`invalid /${key}`)
  return v
}

/** A Flate predictor undone (7.4.4.4): TIFF 2 on 8-bit components, PNG 10–15 (its output spent first). */
function unpredict(data: Uint8Array, parms: Map<string, PdfValue> | null, budget: Budget): Uint8Array {
  const predictor = intParam(parms, 'Predictor', 1)
  if (predictor === 1) return data
  const colors = intParam(parms, 'Colors', 1)
  const bpc = intParam(parms, 'BitsPerComponent', 8)
  const columns = intParam(parms, 'Columns', 1)
  if (colors < 1 || colors > 64 || ![1, 2, 4, 8, 16].includes(bpc) || columns < 1 || columns > 1 << 24)
    throw new Unverifiable('unsupported predictor parameters')
  const rowBytes = Math.ceil((colors * bpc * columns) / 8)
  const pixelBytes = Math.max(1, Math.ceil((colors * bpc) / 8))
  if (predictor === 2) {
    if (bpc !== 8) throw new Unverifiable('unsupported TIFF predictor')
    spend(budget, data.length)
    const out = Uint8Array.from(data)
    for (let row = 0; row < out.length; row += rowBytes)
      for (let k = row + colors; k < Math.min(row + rowBytes, out.length); k++)
        out[k] = (out[k] + out[k - colors]) & 0xff
    return out
  }
  if (predictor < 10 || predictor > 15) throw new Unverifiable('unsupported predictor')
  // PNG: each row a filter type byte then the row, undone in place in the output
  const rows = Math.ceil(data.length / (rowBytes + 1))
  spend(budget, data.length - rows)
  const out = new Uint8Array(data.length - rows)
  let o = 0
  for (let i = 0; i < data.length; i += rowBytes + 1) {
    const type = data[i]
    const len = Math.min(rowBytes, data.length - i - 1)
    const prior = o - rowBytes // the same byte of the row above (none on the first row)
    for (let k = 0; k < len; k++, o++) {
      const raw = data[i + 1 + k]
      const left = k >= pixelBytes ? out[o - pixelBytes] : 0
      const up = prior >= 0 ? out[o - rowBytes] : 0
      const upLeft = prior >= 0 && k >= pixelBytes ? out[o - rowBytes - pixelBytes] : 0
      let add: number
      if (type === 0) add = 0
      else if (type === 1) add = left
      else if (type === 2) add = up
      else if (type === 3) add = (left + up) >> 1
      else if (type === 4) {
        const p = left + up - upLeft
        const pa = Math.abs(p - left)
        const pb = Math.abs(p - up)
        const pc = Math.abs(p - upLeft)
        add = pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft
      } else throw new Unverifiable('invalid PNG predictor row')
      out[o] = (raw + add) & 0xff
    }
  }
  return out.subarray(0, o)
}

const asNames = (v: PdfValue | undefined): string[] => {
  if (v === undefined || v === null) return []
  if (v instanceof PdfName) return [v.name]
  if (Array.isArray(v) && v.every((f) => f instanceof PdfName)) return v.map((f) => (f as PdfName).name)
  throw new Unverifiable('a stream filter that is not a name')
}
const asParms = (v: PdfValue | undefined, count: number): (Map<string, PdfValue> | null)[] => {
  if (v === undefined || v === null) return new Array(count).fill(null)
  if (v instanceof Map) return [v, ...new Array(Math.max(0, count - 1)).fill(null)]
  if (Array.isArray(v) && v.every((p) => p === null || p instanceof Map))
    return v as (Map<string, PdfValue> | null)[]
  throw new Unverifiable('stream decode parameters that are not dictionaries')
}
/** A key and its abbreviation (pdf.js reads `/F` and `/DP` on any stream): both present and unequal is refused. */
function either(dict: Map<string, PdfValue>, key: string, short: string): PdfValue | undefined {
  const long = dict.get(key)
  const abbreviated = dict.get(short)
  if (
    abbreviated === undefined ||
    (short === 'F' && !(abbreviated instanceof PdfName || Array.isArray(abbreviated)))
  )
    return long
  if (long !== undefined) throw new Unverifiable(`a stream with both /${key} and /${short}`)
  return abbreviated
}

/**
 * The stream's data with its filters undone, or null when nothing is to be read from it: no filter (its raw
 * bytes are scanned with the file), or an image or a font program, binary data no reader parses as PDF
 * syntax (read as an object stream it would need its /N) and where a short name such as `/JS` turns up by
 * chance.
 */
const FONT_SUBTYPES = new Set(['Type1C', 'CIDFontType0C', 'OpenType'])
function isBinaryData(dict: Map<string, PdfValue>): boolean {
  const subtype = dict.get('Subtype')
  if (subtype instanceof PdfName && (subtype.name === 'Image' || FONT_SUBTYPES.has(subtype.name))) return true
  return dict.has('Length1') || dict.has('Length2') || dict.has('Length3')
}

function decodeStream(stream: PdfStream, budget: Budget): Uint8Array | null {
  const filters = asNames(either(stream.dict, 'Filter', 'F'))
  if (filters.length === 0) return null
  if (isBinaryData(stream.dict) && !stream.dict.has('N')) return null
  const parms = asParms(either(stream.dict, 'DecodeParms', 'DP'), filters.length)
  if (--budget.streams < 0) throw new Unverifiable('too many streams')
  let data = stream.data
  for (const [k, filter] of filters.entries()) {
    if (filter === 'FlateDecode' || filter === 'Fl')
      data = unpredict(inflate(data, budget), parms[k] ?? null, budget)
    else if (filter === 'ASCIIHexDecode' || filter === 'AHx') data = asciiHex(data, budget)
    else if (filter === 'ASCII85Decode' || filter === 'A85') data = ascii85(data, budget)
    else if (filter === 'RunLengthDecode' || filter === 'RL') data = runLength(data, budget)
    else if (filter === 'Crypt' && !parms[k])
      continue // the identity filter (an encrypted file is refused)
    else if (IMAGE_FILTERS.has(filter)) return null
    else throw new Unverifiable(`filter /${filter} is not decoded here`)
  }
  return data
}

// --- /OpenAction: a destination is allowed, an action is not ---------------------------------------------

/** The most bytes an `/OpenAction` value, or the object it refers to, may take to be read here. */
const OPENING_WINDOW = 4096
/** The most `/OpenAction` names one PDF may have (each costs a parse, and a reference a search). */
const MAX_OPENINGS = 64

/** The value written at `b[at…]`, within {@link OPENING_WINDOW} bytes; undefined when it cannot be read. */
function valueAt(b: Uint8Array, at: number): PdfValue | undefined {
  if (at < 0 || at > b.length) return undefined
  const window = b.subarray(at, Math.min(b.length, at + OPENING_WINDOW))
  try {
    return parseValue(window, 0, window.length)
  } catch (e) {
    if (e instanceof Unverifiable) return undefined
    throw e
  }
}

const isName = (v: PdfValue | undefined, name: string) => v instanceof PdfName && v.name === name

/**
 * Whether an `/OpenAction` value only opens the document at a page: a destination (an array, 12.3.2.2), or
 * a `/GoTo` action to one in this document and nothing else (`<< /S /GoTo /D [3 0 R /Fit] >>`, what pdfTeX
 * with hyperref writes; no `/Next`, no other key, keys read unambiguously). Anything else (another action,
 * a name or string, a reference to resolve) is not.
 */
function opensAPage(v: PdfValue | undefined): boolean {
  if (Array.isArray(v)) return true
  if (!(v instanceof Map) || IRREGULAR.has(v)) return false
  for (const key of v.keys()) if (key !== 'Type' && key !== 'S' && key !== 'D') return false
  const type = v.get('Type')
  return (
    (type === undefined || isName(type, 'Action')) && isName(v.get('S'), 'GoTo') && Array.isArray(v.get('D'))
  )
}

const OBJ_WORD = new TextEncoder().encode('obj')

/** Whether `b[s, e)` is a number as an object header writes one: a sign or none, then 1 to 10 digits. */
function isHeaderNumber(b: Uint8Array, s: number, e: number): boolean {
  const from = b[s] === 0x2b || b[s] === 0x2d ? s + 1 : s
  if (e - from < 1 || e - from > 10) return false
  for (let i = from; i < e; i++) if (b[i] < 0x30 || b[i] > 0x39) return false
  return true
}

/** An `n g obj`: its number, where it begins (its first number) and where it ends (after `obj`). */
type ObjHeader = { num: number; start: number; end: number }

/**
 * Every `n g obj` in the bytes as a reader reads one (white space and comments between, not inside a longer
 * token), wherever it is written (in a string, a comment or a stream's data too). Read in one pass from the
 * end, keeping for each byte where the white space and comments that begin there end (a comment runs to its
 * end of line, then the run goes on as it does after that line): each byte is read a fixed number of times
 * whatever the input (a search that backs off at each number re-reads the rest of the line each time).
 */
function objectHeaders(b: Uint8Array): ObjHeader[] {
  const n = b.length
  const headers: ObjHeader[] = []
  /** A number followed by white space and comments then `obj`: where it begins → where `obj` ends. */
  const seconds = new Map<number, number>()
  /** Where the white space and comments read from `b[i + 1]` end. */
  let gapNext = n
  /** The same from just after the nearest end of line after `i` (-1: none, a comment there never ends). */
  let afterEol = -1
  /** The end of the regular run `i` is in, and where the white space and comments read from there end. */
  let runEnd = n
  let gapAtRunEnd = n
  for (let i = n - 1; i >= 0; i--) {
    const c = b[i]
    let gapEnd = i
    if (isEol(c)) {
      afterEol = gapNext
      gapEnd = gapNext
    } else if (CLASS[c] === 1) gapEnd = gapNext
    else if (c === 0x25) gapEnd = afterEol === -1 ? i : afterEol
    else if (CLASS[c] === 0) {
      if (i + 1 === n || CLASS[b[i + 1]] !== 0) {
        runEnd = i + 1
        gapAtRunEnd = gapNext
      }
      // the run `b[i, runEnd)` when it begins here, a number followed by white space or a comment
      if ((i === 0 || CLASS[b[i - 1]] !== 0) && gapAtRunEnd > runEnd && isHeaderNumber(b, i, runEnd)) {
        const next = gapAtRunEnd
        if (bytesAt(b, next, OBJ_WORD) && (next + 3 >= n || CLASS[b[next + 3]] !== 0))
          seconds.set(i, next + 3)
        const end = seconds.get(next)
        if (end !== undefined) headers.push({ num: Number(ascii(b, i, runEnd)), start: i, end })
      }
    }
    gapNext = gapEnd
  }
  return headers.reverse()
}

/**
 * Where white space read from each of `offsets` ends ({@link skipWhite}): the offsets in order, a run of
 * white space read once however many offsets fall in it.
 */
function skipWhiteFrom(b: Uint8Array, offsets: Iterable<number>): Map<number, number> {
  const ends = new Map<number, number>()
  let from = -1
  let to = -1
  for (const offset of [...new Set(offsets)].sort((x, y) => x - y)) {
    if (offset < from || offset > to) {
      from = offset
      to = skipWhite(b, offset)
    }
    ends.set(offset, to)
  }
  return ends
}

const XREF_TABLE = new RegExp(`(?<!${REGULAR})xref(?!${REGULAR})`, 'g')
const WHITE = '[\\x00\\t\\n\\f\\r ]'
const XREF_SUBSECTION = new RegExp(`${WHITE}*(\\d{1,10})[ \\t]+(\\d{1,10})(?=${WHITE})`, 'y')
const XREF_ENTRY = new RegExp(`${WHITE}*(\\d{1,10})[ \\t]+\\d{1,5}[ \\t]+([nf])`, 'y')

/**
 * Where the cross-reference tables (7.5.4) put the objects `nums` that are in use: the offsets where a reader
 * reads each (it may take the object written there whatever number it is written with).
 */
function xrefTableOffsets(text: string, nums: Set<number>): Map<number, number[]> {
  const offsets = new Map<number, number[]>()
  for (const m of text.matchAll(XREF_TABLE)) {
    let i = m.index + m[0].length
    for (;;) {
      XREF_SUBSECTION.lastIndex = i
      const sub = XREF_SUBSECTION.exec(text)
      if (!sub) break
      i = XREF_SUBSECTION.lastIndex
      const [start, count] = [Number(sub[1]), Number(sub[2])]
      for (let k = 0; k < count; k++) {
        XREF_ENTRY.lastIndex = i
        const entry = XREF_ENTRY.exec(text)
        if (!entry) break
        i = XREF_ENTRY.lastIndex
        if (entry[2] === 'n' && nums.has(start + k)) {
          const at = offsets.get(start + k)
          if (at) at.push(Number(entry[1]))
          else offsets.set(start + k, [Number(entry[1])])
        }
      }
    }
  }
  return offsets
}

const isCount = (v: PdfValue | undefined): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0

/** The objects of an object stream (7.5.7): number and where each begins in `data`; null when unreadable. */
function objStmEntries(dict: Map<string, PdfValue>, data: Uint8Array): { num: number; at: number }[] | null {
  const n = dict.get('N')
  const first = dict.get('First')
  if (!isCount(n) || !isCount(first) || first > data.length) return null
  const header: number[] = []
  for (let i = 0; i < first && header.length < 2 * n; i = tokenEnd) {
    const kind = token(data, i)
    if (kind === T_NONE && CLASS[data[i]] === 1) continue
    const word = kind === T_WORD ? ascii(data, i, Math.min(tokenEnd, i + 32)) : ''
    if (!/^\d+$/.test(word)) return null
    header.push(Number(word))
  }
  if (header.length < 2 * n) return null
  const entries: { num: number; at: number }[] = []
  for (let k = 0; k < header.length; k += 2) entries.push({ num: header[k], at: first + header[k + 1] })
  return entries
}

/**
 * Where a cross-reference stream (7.5.8) puts object `num` when it is compressed: [object stream, index]
 * for each entry of type 2; null when the stream cannot be read there.
 */
function xrefCompressed(
  dict: Map<string, PdfValue>,
  data: Uint8Array,
  num: number,
): [number, number][] | null {
  const w = dict.get('W')
  if (!Array.isArray(w) || w.length !== 3 || !w.every((x) => isCount(x) && x <= 8)) return null
  const widths = w as number[]
  const row = widths[0] + widths[1] + widths[2]
  const index = dict.get('Index') ?? [0, dict.get('Size') ?? null]
  if (!Array.isArray(index) || index.length % 2 || !index.every(isCount) || row === 0) return null
  const found: [number, number][] = []
  let rows = 0
  for (let k = 0; k < index.length; k += 2) {
    const [start, count] = [index[k] as number, index[k + 1] as number]
    if (num >= start && num < start + count) {
      let at = (rows + num - start) * row
      if (at + row > data.length) return null
      const fields = widths.map((width) => {
        let v = 0
        for (let j = 0; j < width; j++) v = v * 256 + data[at++]
        return v
      })
      if ((widths[0] === 0 ? 1 : fields[0]) === 2) found.push([fields[1], fields[2]])
    }
    rows += count
  }
  return found
}

/** The most bytes resolving the `/OpenAction` references may read, over all the objects they may be. */
const RESOLVE_CEILING = 16 * 1024 * 1024

/** What resolving the `/OpenAction` references reads, built once for all of them. */
type Resolution = {
  bytes: Uint8Array
  streams: PdfStream[]
  /** Each stream's data when it is an object stream or a cross-reference stream that can be read. */
  decoded: (Uint8Array | null)[]
  /** Where each `n g obj` ends, by its number. */
  objects: Map<number, number[]>
  /** Where each `n g obj` ends, by where it begins. */
  headerAt: Map<number, number>
  /** Where the cross-reference tables put each object (white space after the offset skipped), by number. */
  tables: Map<number, Set<number>>
  /** The objects of the object streams by the number their header gives them: the data and where each is. */
  inObjStms: Map<number, { data: Uint8Array; at: number }[]>
  /** The cross-reference streams. */
  xrefStreams: number[]
  /** The streams by where their dictionary begins. */
  byAt: Map<number, number>
  /** Each stream's object stream entries, once read (null: unreadable). */
  entries: Map<number, { num: number; at: number }[] | null>
  /** The streams written as each object (`n g obj` then the stream's dictionary), once found. */
  numbered: Map<number, number[] | null>
  /** What reading the objects may still cost. */
  left: { bytes: number }
}

function entriesOf(r: Resolution, k: number): { num: number; at: number }[] | null {
  let entries = r.entries.get(k)
  if (entries === undefined) {
    const data = r.decoded[k]
    entries = data && objStmEntries(r.streams[k].dict, data)
    r.entries.set(k, entries)
  }
  return entries
}

/** The streams written as object `num`; null when one of them is not a stream the reading took. */
function streamsNumbered(r: Resolution, num: number): number[] | null {
  let found = r.numbered.get(num)
  if (found === undefined) {
    const ats = r.objects.get(num) ?? []
    const ends = skipWhiteFrom(r.bytes, ats)
    const streams = ats.map((at) => r.byAt.get(ends.get(at) as number))
    found = streams.length && streams.every((k) => k !== undefined) ? (streams as number[]) : null
    r.numbered.set(num, found)
  }
  return found
}

/** Whether the value written at `b[at…]` opens a page, its reading charged to what resolving may cost. */
function opensAPageAt(r: Resolution, b: Uint8Array, at: number): boolean {
  r.left.bytes -= Math.min(OPENING_WINDOW, Math.max(0, b.length - at))
  if (r.left.bytes < 0) throw new Unverifiable('too much to resolve')
  return opensAPage(valueAt(b, at))
}

/**
 * Whether every object a reader may take for `ref` opens a page ({@link opensAPage}), and there is one: each
 * `n g obj` written with its number, each object written where a cross-reference table puts it, each
 * object of an object stream listed under its number, and each object a cross-reference stream places in
 * an object stream by its index (readers go by the index).
 */
function refOpensAPage(ref: PdfRef, r: Resolution): boolean {
  let targets = 0
  const opens = (b: Uint8Array, at: number) => {
    targets++
    return opensAPageAt(r, b, at)
  }
  for (const offset of r.tables.get(ref.num) ?? []) {
    const end = r.headerAt.get(offset)
    if (end !== undefined && !opens(r.bytes, end)) return false
  }
  for (const at of r.objects.get(ref.num) ?? []) if (!opens(r.bytes, at)) return false
  for (const { data, at } of r.inObjStms.get(ref.num) ?? []) if (!opens(data, at)) return false
  for (const k of r.xrefStreams) {
    const data = r.decoded[k]
    const places = data && xrefCompressed(r.streams[k].dict, data, ref.num)
    if (!places) return false
    for (const [objStm, index] of places) {
      // the object stream: the stream whose dictionary follows `objStm g obj`
      const found = streamsNumbered(r, objStm)
      if (!found) return false
      for (const s of found) {
        const entries = entriesOf(r, s)
        if (!entries || index >= entries.length) return false
        if (!opens(r.decoded[s] as Uint8Array, entries[index].at)) return false
      }
    }
  }
  return targets > 0
}

/**
 * Everything resolving references reads, read once: the object headers, the cross-reference tables, the
 * object streams' entries. Null when an object stream cannot be read (its objects cannot be placed).
 */
function resolution(
  bytes: Uint8Array,
  text: string,
  streams: PdfStream[],
  decoded: (Uint8Array | null)[],
  nums: Set<number>,
): Resolution | null {
  const objects = new Map<number, number[]>()
  const headerAt = new Map<number, number>()
  for (const { num, start, end } of objectHeaders(bytes)) {
    headerAt.set(start, end)
    const at = objects.get(num)
    if (at) at.push(end)
    else objects.set(num, [end])
  }
  const offsets = xrefTableOffsets(text, nums)
  const ends = skipWhiteFrom(bytes, [...offsets.values()].flat())
  const tables = new Map<number, Set<number>>()
  for (const [num, at] of offsets) tables.set(num, new Set(at.map((o) => ends.get(o) as number)))
  const r: Resolution = {
    bytes,
    streams,
    decoded,
    objects,
    headerAt,
    tables,
    inObjStms: new Map(),
    xrefStreams: [],
    byAt: new Map(streams.map((s, k) => [s.at, k])),
    entries: new Map(),
    numbered: new Map(),
    left: { bytes: RESOLVE_CEILING },
  }
  for (const [k, stream] of streams.entries()) {
    if (isName(stream.dict.get('Type'), 'XRef')) r.xrefStreams.push(k)
    else if (stream.dict.has('N') && stream.dict.has('First')) {
      // an object stream (readers do not require its /Type)
      const entries = entriesOf(r, k)
      if (!entries) return null
      for (const entry of entries) {
        if (!nums.has(entry.num)) continue
        const at = r.inObjStms.get(entry.num)
        const here = { data: decoded[k] as Uint8Array, at: entry.at }
        if (at) at.push(here)
        else r.inObjStms.set(entry.num, [here])
      }
    }
  }
  return r
}

type PdfVerdict = { ok: true } | { ok: false; reason: string }

/**
 * Refuses a PDF that names anything active (`#xx` escapes decoded) in its bytes or in any of its streams
 * once decoded (object streams and content streams alike), an `/OpenAction` that does more than open a page
 * of the document or cannot be resolved to one, an encrypted PDF (its streams cannot be read), and one whose
 * streams do not decode within `budget` decoded bytes and {@link PDF_MAX_STREAMS} streams.
 */
export function checkPdf(bytes: Uint8Array, budget = PDF_DECODE_CEILING): PdfVerdict {
  const active = { ok: false, reason: PDF_ACTIVE_REASON } as const
  const text = latin1(bytes)
  /** The objects `/OpenAction`s refer to, resolved once every stream is decoded. */
  const refs: PdfRef[] = []
  let openings = 0
  /** Whether an `/OpenAction` ending at `b[end]` may stay (a reference to resolve is kept in `refs`). */
  const opening = (b: Uint8Array, end: number) => {
    if (++openings > MAX_OPENINGS) return false
    const value = valueAt(b, end)
    if (!(value instanceof PdfRef)) return opensAPage(value)
    refs.push(value)
    return true
  }
  let encrypted = false
  for (const { name, end } of namesIn(text)) {
    if (name === 'OpenAction' ? !opening(bytes, end) : isActiveName(name)) return active
    if (name === 'Encrypt') encrypted = true
  }
  if (encrypted) return { ok: false, reason: PDF_ENCRYPTED_REASON }
  let streams: PdfStream[]
  const decoded: (Uint8Array | null)[] = []
  try {
    let keywords: Set<number>
    ;({ streams, keywords } = readStreams(bytes))
    // a `stream` after a dictionary that the front-to-back reading did not take (inside a string or another
    // stream's data): a reader going by the cross-reference table may, so it is not trusted
    for (const at of streamsAfterDicts(bytes))
      if (!keywords.has(at)) throw new Unverifiable('a hidden stream')
    const left: Budget = { bytes: Math.min(budget, PDF_DECODE_CEILING), streams: PDF_MAX_STREAMS }
    for (const stream of streams) {
      const data = decodeStream(stream, left)
      // kept for resolving references: object streams and cross-reference streams (within the budget; one
      // written without a filter is read as it is, and costs its size all the same)
      const kept = stream.dict.has('N') || isName(stream.dict.get('Type'), 'XRef')
      const plain = data === null && asNames(either(stream.dict, 'Filter', 'F')).length === 0
      if (kept && plain) spend(left, stream.data.length)
      decoded.push(kept ? (plain ? stream.data : data) : null)
      if (data === null) continue
      const content = latin1(data)
      // what a browser would take for markup or a script URL, as in the file's own bytes
      if (ACTIVE_MARKUP.test(content)) return active
      for (const { name, end } of namesIn(content))
        if (name === 'OpenAction' ? !opening(data, end) : isActiveName(name)) return active
    }
  } catch (e) {
    if (e instanceof Unverifiable) return { ok: false, reason: PDF_UNVERIFIABLE_REASON }
    throw e
  }
  if (refs.length) {
    const unique = new Map(refs.map((r) => [r.num, r]))
    try {
      const r = resolution(bytes, text, streams, decoded, new Set(unique.keys()))
      if (!r) return active
      for (const ref of unique.values()) if (!refOpensAPage(ref, r)) return active
    } catch (e) {
      if (e instanceof Unverifiable) return active
      throw e
    }
  }
  return { ok: true }
}
