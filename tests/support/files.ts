/** Small, real files of each allowed format (and hostile ones), built in memory for the upload corpus. */
const b64 = (s: string) => Uint8Array.from(Buffer.from(s, 'base64'))

export const PNG = b64(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
)
export const GIF = b64('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7')
export const JPG = b64(
  '/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAAMCAgICAgMCAgIDAwMDBAYEBAQEBAgGBgUGCQgKCgkICQkKDA8MCgsOCwkJDRENDg8QEBEQCgwSExIQEw8QEBD/yQALCAABAAEBAREA/8wABgAQEAX/2gAIAQEAAD8A0s8g/9k=',
)
export const WEBP = b64('UklGRiIAAABXRUJQVlA4IBYAAAAwAQCdASoBAAEADsD+JaQAA3AAAAAA')
export const ICO = new Uint8Array([
  0,
  0,
  1,
  0,
  1,
  0,
  1,
  1,
  0,
  0,
  1,
  0,
  32,
  0,
  40,
  0,
  0,
  0,
  22,
  0,
  0,
  0,
  ...new Uint8Array(40),
])
export const PDF = new TextEncoder().encode(
  '%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n',
)
export const PDF_JS = new TextEncoder().encode(
  '%PDF-1.4\n1 0 obj << /Type /Catalog /OpenAction 2 0 R >> endobj\n2 0 obj << /S /JavaScript /JS (app.alert(1)) >> endobj\n%%EOF\n',
)
export const CFB = new Uint8Array([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, ...new Uint8Array(504)])
export const SVG = new TextEncoder().encode(
  '<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"><rect width="1" height="1"/></svg>',
)
export const SVG_SCRIPT = new TextEncoder().encode(
  '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script></svg>',
)
export const SVG_ONLOAD = new TextEncoder().encode(
  '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>',
)
/** A script element under a prefix of the SVG namespace: a browser runs it as `<script>`. */
export const SVG_PREFIXED_SCRIPT = new TextEncoder().encode(
  '<svg xmlns="http://www.w3.org/2000/svg" xmlns:x="http://www.w3.org/2000/svg"><x:script>alert(1)</x:script></svg>',
)
/** A javascript: link spelled with character references and a tab, as an attribute value decodes them. */
export const SVG_ENCODED_JS_LINK = new TextEncoder().encode(
  '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><a xlink:href="&#106;ava&#9;scr&#x69;pt:alert(1)"><rect width="1" height="1"/></a></svg>',
)
/** The same under a prefix of non-ASCII letters, which XML names allow. */
export const SVG_UNICODE_PREFIXED_SCRIPT = new TextEncoder().encode(
  '<svg xmlns="http://www.w3.org/2000/svg" xmlns:ü="http://www.w3.org/2000/svg"><ü:script>alert(1)</ü:script></svg>',
)
/** A stylesheet brought in by a processing instruction (a browser loads it, and what it loads). */
export const SVG_STYLESHEET_PI = new TextEncoder().encode(
  '<?xml-stylesheet href="https://evil.example/x.css"?><svg xmlns="http://www.w3.org/2000/svg"><rect width="1" height="1"/></svg>',
)
/** Character references in plain text: nothing active. */
export const SVG_TEXT_REFS = new TextEncoder().encode(
  '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="10"><text y="9">5&#160;&#37;&#x20AC;</text></svg>',
)
export const SVG_BROKEN = new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"><rect></svg>')
export const NOT_SVG_ROOT = new TextEncoder().encode('<html><body>hi</body></html>')
export const HTML = new TextEncoder().encode('<!DOCTYPE html><html><script>alert(1)</script></html>')
export const ELF = new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, ...new Uint8Array(56)])
export const EXE = new Uint8Array([0x4d, 0x5a, 0x90, 0, 3, 0, 0, 0, ...new Uint8Array(120)])
export const SHELL = new TextEncoder().encode('#!/bin/sh\nrm -rf / \u0000\n')
/** A real GIF header followed by an HTML payload (GIFAR-style polyglot). */
export const GIF_POLYGLOT = new Uint8Array([...GIF, ...new TextEncoder().encode('<script>alert(1)</script>')])

/** A minimal stored (uncompressed) ZIP, enough for file-type to recognize OOXML documents. */
export function zip(entries: Record<string, string>): Uint8Array {
  const enc = new TextEncoder()
  const locals: number[] = []
  const central: number[] = []
  let offset = 0
  const u16 = (n: number) => [n & 0xff, (n >> 8) & 0xff]
  const u32 = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >>> 24) & 0xff]
  for (const [name, content] of Object.entries(entries)) {
    const nameBytes = [...enc.encode(name)]
    const data = enc.encode(content)
    const crc = Bun.hash.crc32(data)
    const header = [
      ...u32(0x04034b50),
      ...u16(20),
      ...u16(0),
      ...u16(0),
      ...u16(0),
      ...u16(0),
      ...u32(crc),
      ...u32(data.length),
      ...u32(data.length),
      ...u16(nameBytes.length),
      ...u16(0),
      ...nameBytes,
    ]
    central.push(
      ...u32(0x02014b50),
      ...u16(20),
      ...u16(20),
      ...u16(0),
      ...u16(0),
      ...u16(0),
      ...u16(0),
      ...u32(crc),
      ...u32(data.length),
      ...u32(data.length),
      ...u16(nameBytes.length),
      ...u16(0),
      ...u16(0),
      ...u16(0),
      ...u16(0),
      ...u32(0),
      ...u32(offset),
      ...nameBytes,
    )
    locals.push(...header, ...data)
    offset += header.length + data.length
  }
  const count = Object.keys(entries).length
  const end = [
    ...u32(0x06054b50),
    ...u16(0),
    ...u16(0),
    ...u16(count),
    ...u16(count),
    ...u32(central.length),
    ...u32(offset),
    ...u16(0),
  ]
  return new Uint8Array([...locals, ...central, ...end])
}

const CT = (part: string, type: string) =>
  `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="${part}" ContentType="${type}"/></Types>`
export const DOCX = zip({
  '[Content_Types].xml': CT(
    '/word/document.xml',
    'application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml',
  ),
  'word/document.xml': '<w:document/>',
})
export const XLSX = zip({
  '[Content_Types].xml': CT(
    '/xl/workbook.xml',
    'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml',
  ),
  'xl/workbook.xml': '<workbook/>',
})
