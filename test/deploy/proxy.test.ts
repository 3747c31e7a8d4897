/**
 * config/nginx.conf and config/authd.caddy (a snippet a Caddyfile imports): they parse, they
 * send what config/auth.toml expects (authd's Unix socket, the public name, X-Forwarded-For, believed over the socket), they keep
 * /metrics private; `nginx -t` / `caddy validate` run where those are installed (they are not
 * installed for the tests' sake). The README's nginx lines (Deploy on a VM, step 4) run as written
 * where a test can (in a temp /etc/nginx); the Caddy lines run in readme-deploy.test.ts.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import t from 'tap'
import { ROOT } from '../helpers/app.js'
import { readmeBlock, withoutComment, writeSudo } from '../helpers/readme.js'
import { configFile, installed, parseCaddyfile, parseNginx, readUnit, readVmConfig, value, type CaddyLine, type NginxDirective } from './files.js'

const vm = readVmConfig()
const publicHost = new URL(vm.server.public_url as string).hostname
/** the proxy reaches authd over its Unix socket, not a port any local process could reach */
const socket = vm.server.socket as string

t.test('config/auth.toml is the production setup the proxies expect', async (t) => {
  t.equal(new URL(vm.server.public_url as string).protocol, 'https:', 'public_url is the HTTPS front')
  t.equal(socket, '/run/authd/authd.sock', 'authd listens on a Unix socket, no port')
  t.equal(dirname(socket), `/run/${value(readUnit(), 'Service', 'RuntimeDirectory')}`, "in the unit's RuntimeDirectory")
  t.notOk('host' in vm.server || 'port' in vm.server, 'no host or port to mislead')
  t.notOk('trust_proxy' in vm.server, 'no address is trusted: X-Forwarded-For is believed over the socket only')
  t.notOk('cookie' in vm, 'the cookie keeps its production defaults (Secure, __Host-, Path=/)')
  t.ok((vm.cors.origins as string[]).every((o) => o.startsWith('https://')), 'CORS origins are HTTPS')
})

const nginxText = readFileSync(configFile('nginx.conf'), 'utf8')
const find = (list: NginxDirective[] | undefined, name: string, ...args: string[]): NginxDirective[] =>
  (list ?? []).filter((d) => d.name === name && args.every((a, i) => d.args[i] === a))

t.test('nginx.conf: TLS on 443, a redirect on 80, authd behind it with the client address passed on', async (t) => {
  const top = parseNginx(nginxText)
  const up = find(top, 'upstream', 'authd')[0]
  t.ok(up, 'an upstream named authd')
  t.same(find(up?.block, 'server').map((d) => d.args[0]), [`unix:${socket}`], "pointing at authd's socket (server.socket)")

  const servers = find(top, 'server')
  const plain = servers.find((s) => find(s.block, 'listen', '80').length > 0)
  t.same(find(plain?.block, 'return').map((d) => d.args), [['301', 'https://$host$request_uri']], 'port 80 only redirects to HTTPS')

  const tls = servers.find((s) => find(s.block, 'listen', '443', 'ssl').length > 0)!
  t.ok(tls, 'a server on 443 with ssl')
  t.same(find(tls.block, 'server_name').map((d) => d.args), [[publicHost]], 'named as server.public_url')
  t.equal(find(tls.block, 'ssl_certificate').length, 1)
  t.equal(find(tls.block, 'ssl_certificate_key').length, 1)
  t.same(find(tls.block, 'client_max_body_size').map((d) => d.args), [['16k']], 'the body limit of authd (16kb)')

  const root = find(tls.block, 'location', '/')[0]!
  t.same(find(root.block, 'proxy_pass').map((d) => d.args), [['http://authd']])
  const headers = Object.fromEntries(find(root.block, 'proxy_set_header').map((d) => [d.args[0]!.toLowerCase(), d.args[1]]))
  t.equal(headers['x-forwarded-for'], '$proxy_add_x_forwarded_for', 'X-Forwarded-For ends with the client address nginx saw')
  t.equal(headers['host'], '$host')
  t.equal(headers['x-forwarded-proto'], '$scheme')

  const metrics = find(tls.block, 'location', '=', '/metrics')[0]
  t.same(find(metrics?.block, 'return').map((d) => d.args), [['404']], '/metrics is not served to the internet')
})

t.test("the README's nginx lines: the site installed and enabled as written (in a temp /etc/nginx), the rest held to the files", async (t) => {
  const lines = readmeBlock('Deploy on a VM #5').text.split('\n').map(withoutComment).filter((l) => l !== '')
  const unit = readUnit()
  // apt and certbot need a VM (a package manager, DNS pointing here): held to what the files expect
  t.equal(lines[0], 'sudo apt-get install -y nginx certbot python3-certbot-nginx')
  t.equal(lines[1], `sudo usermod -aG ${value(unit, 'Service', 'Group')} www-data`, "nginx's user (Debian's www-data) joins authd's group, the socket's")
  t.equal(value(unit, 'Service', 'RuntimeDirectoryMode'), '0750', "whose directory lets the group in (the socket is 0660)")
  t.equal(lines[2], `sudo certbot certonly --nginx -d ${publicHost}`, 'a certificate for the public name')
  const tls = find(parseNginx(nginxText), 'server').find((s) => find(s.block, 'listen', '443', 'ssl').length > 0)!
  t.same(find(tls.block, 'ssl_certificate').map((d) => d.args), [[`/etc/letsencrypt/live/${publicHost}/fullchain.pem`]], "nginx.conf reads it where certbot puts it")
  t.same(find(tls.block, 'ssl_certificate_key').map((d) => d.args), [[`/etc/letsencrypt/live/${publicHost}/privkey.pem`]])
  // install and link: run as written, in a temp /etc/nginx laid out as Debian's nginx package lays it out
  const dir = t.testdir({ nginx: { 'sites-available': {}, 'sites-enabled': {} } })
  const etc = join(dir, 'nginx')
  const placed = lines.filter((l) => /^sudo (install|ln) /.test(l))
  t.same(placed, [
    'sudo install -m 0644 "$(npm root -g)/authd/config/nginx.conf" /etc/nginx/sites-available/authd',
    'sudo ln -s /etc/nginx/sites-available/authd /etc/nginx/sites-enabled/authd',
  ])
  const script = placed.map((l) => l.replaceAll('"$(npm root -g)/authd/', `"${ROOT}/`).replaceAll('/etc/nginx/', `${etc}/`)).join('\n')
  const r = spawnSync('bash', ['-euo', 'pipefail', '-c', script], { encoding: 'utf8', env: { ...process.env, PATH: `${writeSudo(join(dir, 'sbin'))}:${process.env.PATH}` } })
  t.equal(r.status, 0, r.stderr)
  const site = join(etc, 'sites-available', 'authd')
  t.equal(readFileSync(site, 'utf8'), nginxText, 'the site is config/nginx.conf')
  t.equal(statSync(site).mode & 0o777, 0o644)
  t.equal(readlinkSync(join(etc, 'sites-enabled', 'authd')), site, 'and enabled')
  // between the two, the reader puts their name for auth.example.com: the server names and the certificate paths above
  t.equal(lines[4], 'sudoedit /etc/nginx/sites-available/authd')
  t.same(find(parseNginx(nginxText), 'server').flatMap((s) => find(s.block, 'server_name').map((d) => d.args)), [[publicHost], [publicHost]])
  // nginx -t (above, where installed), then a restart, not a reload: the new group applies to a new process
  t.equal(lines[6], 'sudo nginx -t && sudo systemctl restart nginx')
  t.equal(lines.length, 7)
})

t.test('the nginx parser used above refuses broken input', async (t) => {
  t.throws(() => parseNginx('server { listen 80; '))
  t.throws(() => parseNginx('server { listen 80 }'))
  t.throws(() => parseNginx('}'))
})

const nginxSkip = installed('nginx') ? false : 'nginx is not installed (it is not installed for the tests); nginx.conf was parsed and checked above'
const opensslSkip = installed('openssl') ? false : 'openssl is not installed: no certificate for nginx -t'

t.test('nginx -t accepts nginx.conf', { skip: nginxSkip || opensslSkip }, async (t) => {
  const dir = t.testdir()
  // a throwaway certificate in place of certbot's (nginx -t opens the files); nothing else changes
  const cert = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', `/CN=${publicHost}`, '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { encoding: 'utf8' })
  t.equal(cert.status, 0, cert.stderr)
  const site = nginxText.replace(/^(\s*ssl_certificate) \S+;/m, `$1 ${join(dir, 'cert.pem')};`).replace(/^(\s*ssl_certificate_key) \S+;/m, `$1 ${join(dir, 'key.pem')};`)
  writeFileSync(join(dir, 'authd.conf'), site)
  writeFileSync(
    join(dir, 'nginx.conf'),
    `pid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\nevents {}\nhttp {\n  access_log off;\n  include ${dir}/authd.conf;\n}\n`,
  )
  const r = spawnSync('nginx', ['-t', '-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')], { encoding: 'utf8', timeout: 30_000 })
  t.equal(r.status, 0, r.stderr)
  t.match(r.stderr, /test is successful/)
})

const caddyText = readFileSync(configFile('authd.caddy'), 'utf8')
const directive = (block: CaddyLine[] | undefined, name: string): CaddyLine[] => (block ?? []).filter((l) => l.tokens[0] === name)

t.test('authd.caddy: one site for the public name, authd behind it, /metrics kept private, HTTP redirected', async (t) => {
  const sites = parseCaddyfile(caddyText)
  t.same(sites.map((s) => s.tokens), [[publicHost], [`http://${publicHost}`]], 'the public name over HTTPS, and over HTTP')
  const site = sites[0]!
  // the site address is the public name: Caddy obtains its certificate
  t.same(sites[1]!.block?.map((l) => l.tokens), [['redir', 'https://{host}{uri}', '308']], 'plain HTTP only redirects, whatever catch-all site the Caddyfile has on port 80')
  t.same(directive(site.block, 'reverse_proxy').map((l) => l.tokens.slice(1)), [[`unix/${socket}`]], "to authd's socket (server.socket)")
  t.notOk(directive(site.block, 'reverse_proxy')[0]?.block, 'with Caddy\'s defaults: it sets X-Forwarded-For itself')
  const words = (lines: CaddyLine[] | undefined): string[] => (lines ?? []).flatMap((l) => [...l.tokens, ...words(l.block)])
  t.notOk(words(sites).includes('trusted_proxies'), 'and trusts no client-sent X-Forwarded-For (no trusted_proxies)')
  t.same(directive(site.block, 'respond').map((l) => l.tokens.slice(1)), [['/metrics', '404']], '/metrics is not served to the internet')
  const body = directive(site.block, 'request_body')[0]
  t.same(directive(body?.block, 'max_size').map((l) => l.tokens.slice(1)), [['16KB']], 'the body limit of authd (16kb)')
})

/** A Caddyfile of a machine that already serves a site, with global options, as Debian's caddy package leaves one */
const existingCaddyfile = '{\n\temail admin@example.com\n}\n\n:80 {\n\troot * /usr/share/caddy\n\tfile_server\n}\n'
const IMPORT = 'import /etc/caddy/authd.caddy'

t.test('authd.caddy is a snippet a Caddyfile imports: it adds a site and replaces nothing', async (t) => {
  // a global options block is a block with no address, and is allowed only at the top of the
  // importing file: the snippet must have none, nor an import of its own
  const sites = parseCaddyfile(caddyText)
  t.ok(sites.every((s) => s.tokens.length > 0 && s.block !== undefined), 'only site blocks (no global options block, no bare directives)')
  t.notOk(sites.some((s) => s.tokens[0] === 'import'), 'no import of its own')
  // `import` pastes the file's tokens in place: the machine's Caddyfile with the line appended
  const appended = `${existingCaddyfile}${IMPORT}\n`
  const merged = parseCaddyfile(appended.replace(IMPORT, caddyText))
  t.same(merged.map((s) => s.tokens), [[], [':80'], [publicHost], [`http://${publicHost}`]], 'the global options stay first, the existing site stays, authd\'s sites are added')
})

t.test('the Caddyfile parser used above refuses broken input', async (t) => {
  t.throws(() => parseCaddyfile('example.com {\n  reverse_proxy x\n'))
  t.throws(() => parseCaddyfile('}\n'))
})

t.test('caddy validate accepts a Caddyfile that imports authd.caddy', { skip: installed('caddy') ? false : 'caddy is not installed (it is not installed for the tests); authd.caddy was parsed and checked above' }, async (t) => {
  const dir = t.testdir()
  const main = join(dir, 'Caddyfile')
  writeFileSync(main, `${existingCaddyfile}import ${configFile('authd.caddy')}\n`)
  const r = spawnSync('caddy', ['validate', '--adapter', 'caddyfile', '--config', main], { encoding: 'utf8', timeout: 60_000 })
  t.equal(r.status, 0, r.stderr)
})
