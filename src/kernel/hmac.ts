import { hmac } from '@noble/hashes/hmac.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'

/** HMAC-SHA256 as lower-case hex (portable: Bun and Workers); webhooks in and postbacks out sign with it. */
export const hmacHex = (secret: string, message: string) =>
  bytesToHex(hmac(sha256, utf8ToBytes(secret), utf8ToBytes(message)))
