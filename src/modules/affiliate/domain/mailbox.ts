/** Providers that ignore dots in the local part, and the name each is also reached by. */
const DOTLESS: Record<string, string> = { 'gmail.com': 'gmail.com', 'googlemail.com': 'gmail.com' }

/**
 * The mailbox an address delivers to, as far as it can be told from the address: case and surrounding
 * space ignored, a `+tag` dropped (sub-addressing: Gmail, Outlook, Fastmail, iCloud and most servers), and
 * for Gmail the dots of the local part and its googlemail.com name. Two addresses with one mailbox are one
 * person's; an affiliate registering as `partner+x@example.com` is still `partner@example.com`.
 */
export function mailboxOf(email: string): string {
  const address = email.trim().toLowerCase()
  const at = address.lastIndexOf('@')
  if (at <= 0) return address
  let local = address.slice(0, at)
  let domain = address.slice(at + 1)
  const plus = local.indexOf('+')
  if (plus > 0) local = local.slice(0, plus)
  const dotless = DOTLESS[domain]
  if (dotless) {
    domain = dotless
    local = local.replaceAll('.', '')
  }
  return `${local}@${domain}`
}
