/**
 * A connection URL as it may be shown (check-config, logs, the TUI's header, messages): the
 * password of its user part, if it has one, replaced by `***` (`postgres://authd:***@db/authd`).
 * Read by hand rather than by `new URL`, which refuses forms libpq takes (`postgres://u:p@/db?host=/run/postgresql`).
 * A `password=` parameter in the query is hidden too, and text that is no such URL after its first `:`.
 */
export function redactUrl(text: string): string {
  // not scheme://…: where a password would be is unknown, so nothing after the first ":" is shown
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(text)) return text.includes(':') ? `${text.slice(0, text.indexOf(':'))}:***` : text
  const m = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#]*)@/.exec(text)
  let out = text
  if (m !== null) {
    const user = m[2]!
    const colon = user.indexOf(':')
    if (colon !== -1) out = `${m[1]}${user.slice(0, colon)}:***@${text.slice(m[0].length)}`
  }
  return out.replace(/([?&]password=)[^&#]*/gi, '$1***')
}
