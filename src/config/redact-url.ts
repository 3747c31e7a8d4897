/**
 * A connection URL as it may be shown (check-config, logs, the TUI's header, messages): the
 * password of its user part, if it has one, replaced by `***` (`postgres://authd:***@db/authd`).
 * Read by hand rather than by `new URL`, which refuses forms libpq takes (`postgres://u:p@/db?host=/run/postgresql`).
 * A `password=` or `sslpassword=` parameter in the query is hidden too; text that is no such URL
 * shows nothing after its first `:`, and no `password=` value (a libpq key=value string).
 */
export function redactUrl(text: string): string {
  // not scheme://…: where a password would be is unknown, so nothing after the first ":" is shown
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(text)) {
    const shown = text.includes(':') ? `${text.slice(0, text.indexOf(':'))}:***` : text
    return shown.replace(/(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)/gi, '$1***')
  }
  // A plain user name, ":" and everything up to the last "@" (a password may hold an unescaped "@",
  // "/", "?" or "#"), else the user part up to the "@" before any "/", "?" or "#": where the two
  // readings differ, more is hidden rather than a password shown.
  const m = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^:/?#@]*:.*)@(?=[^@]*$)/.exec(text) ?? /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#]*)@/.exec(text)
  let out = text
  if (m !== null) {
    const user = m[2]!
    const colon = user.indexOf(':')
    if (colon !== -1) out = `${m[1]}${user.slice(0, colon)}:***@${text.slice(m[0].length)}`
  }
  return out.replace(/([?&](?:ssl)?password=)[^&#]*/gi, '$1***')
}
