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
    return hidePasswordKeys(shown)
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

/** the values of libpq `password=` and `sslpassword=` keys (a key=value string), as `***` */
const hidePasswordKeys = (text: string): string => text.replace(/(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)/gi, '$1***')

/** a `scheme://` URL inside other text, up to the next white space */
const URL_IN_TEXT = /[A-Za-z][A-Za-z0-9+.-]*:\/\/\S*/g

/**
 * Any text a message shows, for a value that was not checked to be a URL (a misspelled key's, one
 * of the wrong type): each `scheme://` URL in it as redactUrl shows one, and the value of a
 * `password=` key elsewhere in it hidden. The rest is kept as written, so the message still
 * says what was given.
 */
export function redactSecrets(text: string): string {
  let out = ''
  let last = 0
  for (const m of text.matchAll(URL_IN_TEXT)) {
    out += hidePasswordKeys(text.slice(last, m.index)) + redactUrl(m[0])
    last = m.index + m[0].length
  }
  return out + hidePasswordKeys(text.slice(last))
}
