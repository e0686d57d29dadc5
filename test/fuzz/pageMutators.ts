/**
 * The fuzzer's mutations of page requests (pages.ts, docs/web.md#routes-and-forms): query
 * strings, path values, methods, the session cookie and other headers; for forms, their fields
 * (missing, empty, huge, duplicated, unknown, mistyped), their body (not UTF-8, random bytes,
 * another media type, compressed, chunked, over 16 KiB, empty), the csrf token and the Origin
 * (docs/security.md#csrf). Field values come from per-field pools that never hold a secret, so
 * a page showing back what was typed is not a leak; only `password` fields carry passwords.
 */
import type { Fuzzer } from './fuzzer.js';
import type { WsTag } from './types.js';
import type { PageRoute } from '../../src/web/app.js';
import { SCOPES } from '../../src/auth/keys.js';
import { EVENT_TYPES } from '../../src/areas/events/events.js';
import { BAD_UTF8, DAY_EDGES, UNICODE_EDGES, WORDS } from './edges.js';
import { idsOf, slugsOf, paramKindOf, type PageDraft } from './pages.js';
import { uniqueNumber } from './generate.js';
import { show } from './util.js';

/** One kind of page mutation: how often it is picked, when it applies, how it changes a draft. */
export interface PageMutator {
  name: string;
  weight: number;
  applies(d: PageDraft, f: Fuzzer): boolean;
  /** Changes `d`; returns the mutation's name (with detail), or null when it could not apply. */
  apply(d: PageDraft, f: Fuzzer): string | null;
}

const EVIL = '<img src=x onerror=alert(1)>';
const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** 43 random base62 characters: the shape of a session token or a pre-session nonce. */
const token43 = (f: Fuzzer): string => Array.from({ length: 43 }, () => B62[f.g.int(62)]).join('');

/** A day `days` from the run's clock, as a date field sends it. */
const day = (f: Fuzzer, days: number): string => new Date(f.clock.now() + days * 86_400_000).toISOString().slice(0, 10);

/** The fields of a valid form of `route` (without `csrf`); a route not listed sends only its csrf token. */
export function validFields(f: Fuzzer, route: PageRoute, ws: WsTag = 'A'): Array<[string, string]> {
  const g = f.g;
  const p = f.pages!;
  const me = p.sessions[ws];
  switch (route.name) {
    case '/settings/sources': return [['content', JSON.stringify({ openapi: '3.0.3', info: { title: `Fuzz added ${uniqueNumber(f)}`, version: '1' }, paths: { '/items': { get: { summary: 'Items', responses: { 200: { description: 'OK' } } } } } })], ['name', g.chance(0.5) ? '' : `fuzz source ${g.pick(WORDS)}`]];
    case '/settings/users': return [['email', `invited-${f.seed}-${uniqueNumber(f)}@fuzz.example`], ['role', g.pick(['member', 'owner'])]];
    // The run's users keep their email and password (a page request may not sign the run out of its own session).
    case '/settings/account/email': return [['email', me.email], ['password', me.password]];
    case '/settings/account/password': return [['current', me.password], ['password', me.password]];
    case '/settings/login': return [['email', g.chance(0.2) ? p.signin.email.toUpperCase() : p.signin.email], ['password', p.signin.password]];
    case '/settings/activate': {
      const password = `fuzz activation password ${f.seed}-${uniqueNumber(f)}`;
      f.srv.watch(password);
      return [['password', password]];
    }
    case '/settings/keys': {
      const scopes: Array<[string, string]> = g.chance(0.3) ? [['scopes', '*']] : g.shuffle([...SCOPES]).slice(0, g.range(1, 3)).map((s) => ['scopes', s]);
      return [['name', `fuzz key ${uniqueNumber(f)} ${g.pick(WORDS)}`], ...scopes, ['expiresAt', g.chance(0.5) ? '' : day(f, g.range(1, 400))]];
    }
    case '/settings/sources/{id}/publish': return [['slug', `fz-${f.seed}-${uniqueNumber(f)}`]];
    case '/settings/webhooks': {
      const events: Array<[string, string]> = g.chance(0.4) ? [['events', '*']] : g.shuffle([...EVENT_TYPES]).slice(0, g.range(1, 3)).map((t) => ['events', t]);
      return [['url', `${f.up.url}/hook/${uniqueNumber(f)}`], ...events, ['description', g.chance(0.5) ? '' : `fuzz endpoint ${g.pick(WORDS)}`]];
    }
    default: return [];
  }
}

/** Values of field `name` that break a rule (or sit at its edge); none is a secret. */
function edgeValues(f: Fuzzer, name: string, d: PageDraft): string[] {
  const other = d.ws === 'A' ? 'B' : 'A';
  const common = ['', ' ', EVIL, '%00', '\u0000', 'a\u0000b', '日本語', '👩‍💻', '\ufeff', '\u202e', '"\'<>&', '../../etc/passwd', 'null', '__proto__'];
  switch (name) {
    case 'name': return [...common, 'x'.repeat(200), 'x'.repeat(201), '😀'.repeat(200), '😀'.repeat(201), ...UNICODE_EDGES.slice(0, 12)];
    case 'scopes': return ['admin:all', 'ISSUES:READ', 'issues:read ', '*,issues:read', 'issues', '**', '', 'sources:write\u0000'];
    case 'expiresAt': return [...DAY_EDGES, day(f, 0), day(f, -1), day(f, 1), '2030-01-31T00:00:00Z', '+275760-09-13', '１２３４-01-01'];
    case 'slug': return ['-bad', 'A', 'a', 'x'.repeat(63), 'x'.repeat(64), 'a b', '..', 'a_b', 'ab-', ...slugsOf(f, other, true), ...slugsOf(f, other, false), ...slugsOf(f, d.ws, true)];
    case 'url': return ['ftp://example.com/x', 'http://user:pw@127.0.0.1/x', 'not a url', 'javascript:alert(1)', 'http://[::1]:9/x', 'http://169.254.169.254/latest', 'http://no-such-host.invalid/x', `${f.up.url}/${'x'.repeat(2100)}`, 'https://', EVIL, '//example.com'];
    case 'events': return ['nope', 'conversation.*', '*', '', 'conversation.created ', 'CONVERSATION.CREATED', 'source.deleted\u0000'];
    case 'description': return ['x'.repeat(500), 'x'.repeat(501), EVIL, ...UNICODE_EDGES.slice(12, 24)];
    case 'email': return ['nobody@fuzz.example', 'NOBODY@FUZZ.EXAMPLE', 'a@b', '@', 'x'.repeat(330), `${'x'.repeat(65)}@fuzz.example`, EVIL, 'signin@fuzz.example\u0000', ' signin@fuzz.example '];
    case 'password': return ['short', '', 'not the password 1', 'x'.repeat(11), 'x'.repeat(201), '\u0000'.repeat(12), 'e\u0301'.repeat(12)];
    default: return common;
  }
}

/** The names of the draft's fields but csrf. */
const fieldNames = (d: PageDraft): string[] => [...new Set(d.fields.map(([k]) => k).filter((k) => k !== 'csrf'))];
/** The draft is a form POST (of a page that takes one). */
const isForm = (d: PageDraft): boolean => d.method === 'POST' && d.route.methods.includes('POST');
/** Replaces the csrf field(s) of the draft with `values`. */
const setCsrf = (d: PageDraft, values: string[]) => { d.fields = [...d.fields.filter(([k]) => k !== 'csrf'), ...values.map((v): [string, string] => ['csrf', v])]; };
/** Sets (or, with undefined, removes) cookie `name`. */
const setCookie = (d: PageDraft, name: string, value: string | undefined) => {
  d.cookies = d.cookies.filter(([k]) => k !== name);
  if (value !== undefined) d.cookies.push([name, value]);
};
/** The urlencoded form of the draft's fields. */
const encoded = (d: PageDraft): string => new URLSearchParams(d.fields).toString();

/** Every page mutation, in the order the weighted pick walks them (a seed names the same choices). */
export const PAGE_MUTATORS: PageMutator[] = [
  // ── query ──
  {
    name: 'query.odd', weight: 3, applies: () => true,
    apply(d, f) {
      const k = f.g.pick(['q', 'token', 'revoked', 'published', 'unpublished', 'deleted', 'activated', 'signedOut', 'x']);
      const raw = f.g.pick([`${k}=%ZZ`, `${k}=%`, `${k}=%00`, `${k}=%C0%AF`, `${k}=%ED%A0%80`, `${k}=%FF%FE`, `${k}=a+b`, '&&&', '=x', k, `${k}==`, `${k}=1&${k}=2`,
        `${k}=${encodeURIComponent(EVIL)}`, '__proto__=1&constructor=x', `${k}[]=1`, `${k}=%F0%9F%98%80`, `${k}=${'A'.repeat(43)}`, `${k}=..%2F..%2F`, `${k}=%E2%80%AE`]);
      d.query = raw;
      return `query.odd(${show(raw.slice(0, 24))})`;
    },
  },
  {
    // The request target stays under 11 KB: past the HTTP parser's 16 KiB of head, the parser
    // answers 431 before any routing, for the API and the pages alike (docs/security.md#connections).
    name: 'query.huge', weight: 1, applies: () => true,
    apply(d, f) {
      const k = f.g.pick(['q', 'token', 'revoked', 'x']);
      const ch = f.g.pick(['a', 'é', '日']);
      const n = Math.min(f.g.pick([501, 2049, 5000, 11_000]), Math.floor(11_000 / Buffer.byteLength(encodeURIComponent(ch))));
      d.query = [[k, ch.repeat(n)]];
      return `query.huge(${k},${n})`;
    },
  },
  {
    name: 'query.foreignId', weight: 2, applies: (d) => d.method === 'GET' && ['/settings/keys', '/settings/sources'].includes(d.route.name),
    apply(d, f) {
      const other = d.ws === 'A' ? 'B' : 'A';
      const ids = idsOf(f, d.route.name === '/settings/keys' ? 'key' : 'source', other);
      if (!ids.length) return null;
      d.query = [[d.route.name === '/settings/keys' ? 'revoked' : f.g.pick(['published', 'unpublished']), f.g.pick(ids)]];
      return 'query.foreignId';
    },
  },
  // ── path ──
  {
    name: 'param.foreign', weight: 5, applies: (d) => Object.keys(d.params).length > 0,
    apply(d, f) {
      const p = f.g.pick(Object.keys(d.params));
      const kind = paramKindOf(d.route, p);
      const other = d.ws === 'A' ? 'B' : 'A';
      const values = kind === 'slug' ? [...slugsOf(f, other, false), ...slugsOf(f, d.ws, false)] : idsOf(f, kind, other);
      if (!values.length) return null;
      d.params[p] = encodeURIComponent(f.g.pick(values));
      return `param.foreign(${p})`;
    },
  },
  {
    name: 'param.random', weight: 2, applies: (d) => Object.keys(d.params).length > 0,
    apply(d, f) {
      const p = f.g.pick(Object.keys(d.params));
      d.params[p] = paramKindOf(d.route, p) === 'slug' ? `no-such-${uniqueNumber(f)}` : f.g.uuid();
      return `param.random(${p})`;
    },
  },
  {
    name: 'param.weird', weight: 3, applies: (d) => Object.keys(d.params).length > 0,
    apply(d, f) {
      const p = f.g.pick(Object.keys(d.params));
      const v = f.g.pick(['%00', `${d.params[p]}%00`, '..', '%2e%2e', '..%2F..%2F', '%2F', 'null', 'undefined', '__proto__', 'constructor', '0', '-1', '%20',
        '%F0%9F%98%80', '%E2%80%AE', `${d.params[p]}.json`, "'", '%27%20OR%201%3D1', '*', '%C0%AF', '%ED%A0%80', '$', '~', `${d.params[p]};x`, '%252F', 'A'.repeat(100),
        encodeURIComponent(EVIL), '%', '%ZZ', 'abc%', '%E0%A4%A', 'a'.repeat(101), '%41'.repeat(40)]);
      d.params[p] = v;
      return `param.weird(${p},${show(v.slice(0, 20))})`;
    },
  },
  // ── method ──
  {
    name: 'method.other', weight: 3, applies: () => true,
    apply(d, f) {
      const m = f.g.pick(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);
      if (m === d.method) return null;
      d.method = m;
      return `method.other(${m})`;
    },
  },
  // ── session ──
  {
    name: 'session.none', weight: 3, applies: (d) => d.cookies.some(([k]) => k === 'sw_session'),
    apply(d) { setCookie(d, 'sw_session', undefined); return 'session.none'; },
  },
  {
    name: 'session.forged', weight: 2, applies: (d) => !d.route.name.startsWith('/assets/'),
    apply(d, f) { setCookie(d, 'sw_session', token43(f)); return 'session.forged'; },
  },
  {
    name: 'session.malformed', weight: 1, applies: (d) => !d.route.name.startsWith('/assets/'),
    apply(d, f) {
      const v = f.g.pick(['', 'x', 'a'.repeat(5000), '%00', '"quoted"', `${f.pages!.sessions[d.ws].token}x`, f.pages!.sessions[d.ws].token.slice(1), f.pages!.sessions[d.ws].token.toLowerCase()]);
      setCookie(d, 'sw_session', v);
      return `session.malformed(${v.length})`;
    },
  },
  {
    name: 'session.other', weight: 2, applies: (d) => !d.route.name.startsWith('/assets/'),
    apply(d, f) {
      // The other workspace's live session, with this draft's ids and csrf token.
      setCookie(d, 'sw_session', f.pages!.sessions[d.ws === 'A' ? 'B' : 'A'].token);
      return 'session.other';
    },
  },
  {
    name: 'session.twice', weight: 1, applies: (d) => d.cookies.some(([k]) => k === 'sw_session'),
    apply(d, f) {
      const real = d.cookies.find(([k]) => k === 'sw_session')![1];
      const first = f.g.chance(0.5);
      d.cookies = d.cookies.filter(([k]) => k !== 'sw_session');
      d.cookies.push(['sw_session', first ? real : token43(f)], ['sw_session', first ? token43(f) : real]);
      return `session.twice(${first ? 'realFirst' : 'forgedFirst'})`;
    },
  },
  // ── other headers ──
  {
    name: 'header.misc', weight: 2, applies: () => true,
    apply(d, f) {
      const [k, v] = f.g.pick<[string, string]>([['X-Request-Id', 'r'.repeat(129)], ['X-Request-Id', 'a b'], ['X-Request-Id', '<script>'],
        ['X-Forwarded-Proto', 'https'], ['X-Forwarded-For', '10.0.0.1'], ['Accept', 'application/json'], ['Accept-Encoding', 'gzip, br'], ['Range', 'bytes=0-10'],
        ['If-None-Match', '*'], ['If-Modified-Since', 'Thu, 01 Jan 2099 00:00:00 GMT'], ['Cookie', 'a=b; __proto__=x; sw_session'], ['Connection', 'close'], ['X-HTTP-Method-Override', 'DELETE']]);
      d.headers[k] = v;
      return `header.misc(${k})`;
    },
  },
  {
    name: 'header.host', weight: 0.5, applies: (d) => d.method === 'GET',
    apply(d, f) { d.headers.Host = f.g.pick(['evil.example', 'localhost', '127.0.0.1:1']); return 'header.host'; },
  },
  // ── form fields ──
  {
    name: 'field.missing', weight: 3, applies: (d) => isForm(d) && fieldNames(d).length > 0,
    apply(d, f) { const k = f.g.pick(fieldNames(d)); d.fields = d.fields.filter(([x]) => x !== k); return `field.missing(${k})`; },
  },
  {
    name: 'field.empty', weight: 2, applies: (d) => isForm(d) && fieldNames(d).length > 0,
    apply(d, f) { const k = f.g.pick(fieldNames(d)); d.fields = d.fields.map(([x, v]) => [x, x === k ? '' : v]); return `field.empty(${k})`; },
  },
  {
    name: 'field.huge', weight: 2, applies: (d) => isForm(d),
    apply(d, f) {
      const names = fieldNames(d);
      const k = names.length ? f.g.pick(names) : 'name';
      const ch = f.g.pick(['a', 'é', '日', '😀']);
      const n = f.g.pick([201, 501, 2001, 5000, 15_000]);
      d.fields = [...d.fields.filter(([x]) => x !== k), [k, ch.repeat(n)]];
      return `field.huge(${k},${n})`;
    },
  },
  {
    name: 'field.dup', weight: 2, applies: (d) => isForm(d) && fieldNames(d).length > 0,
    apply(d, f) {
      const k = f.g.pick(fieldNames(d));
      d.fields.push([k, f.g.pick(edgeValues(f, k, d))]);
      return `field.dup(${k})`;
    },
  },
  {
    name: 'field.unknown', weight: 2, applies: isForm,
    apply(d, f) {
      const k = f.g.pick(['extra', '__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'csrf[]', 'CSRF', 'Name', '', 'x'.repeat(300), 'name\u0000', 'workspaceId', 'scopes[]']);
      d.fields.push([k, f.g.pick(['1', 'x', '', EVIL])]);
      return `field.unknown(${show(k.slice(0, 12))})`;
    },
  },
  {
    name: 'field.edge', weight: 5, applies: (d) => isForm(d) && fieldNames(d).length > 0,
    apply(d, f) {
      const k = f.g.pick(fieldNames(d));
      const v = f.g.pick(edgeValues(f, k, d));
      let done = false;
      d.fields = d.fields.map(([x, old]) => { if (x === k && !done) { done = true; return [x, v]; } return [x, old]; });
      return `field.edge(${k},${show(v.slice(0, 16))})`;
    },
  },
  // ── form body ──
  {
    name: 'body.badUtf8', weight: 2, applies: isForm,
    apply(d, f) {
      const bad = f.g.pick(BAD_UTF8);
      const k = fieldNames(d)[0] ?? 'name';
      d.raw = Buffer.concat([Buffer.from(`${encoded(d)}&${k}=`), bad]);
      return `body.badUtf8(${bad.toString('hex')})`;
    },
  },
  {
    name: 'body.percentBadUtf8', weight: 1, applies: isForm,
    apply(d, f) {
      const k = fieldNames(d)[0] ?? 'name';
      const v = f.g.pick(['%C0%AF', '%FF%FE', '%ED%A0%80', '%E2%82', '%F4%90%80%80']);
      d.raw = Buffer.from(`${encoded(d)}&${k}=${v}`);
      return `body.percentBadUtf8(${v})`;
    },
  },
  {
    name: 'body.garbage', weight: 1, applies: isForm,
    apply(d, f) { d.raw = f.g.bytes(f.g.pick([1, 17, 300, 4000])); return `body.garbage(${d.raw.length})`; },
  },
  {
    name: 'body.type', weight: 3, applies: isForm,
    apply(d, f) {
      const t = f.g.pick(['application/json', 'text/plain', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded; charset=utf-8',
        'APPLICATION/X-WWW-FORM-URLENCODED', 'application/x-www-form-urlencodedx', 'text/html', '(none)']);
      if (t === '(none)') delete d.headers['Content-Type']; else d.headers['Content-Type'] = t;
      return `body.type(${t})`;
    },
  },
  {
    name: 'body.json', weight: 1, applies: isForm,
    apply(d) {
      d.headers['Content-Type'] = 'application/json';
      d.raw = Buffer.from(JSON.stringify(Object.fromEntries(d.fields)));
      return 'body.json';
    },
  },
  {
    name: 'body.encoding', weight: 1, applies: isForm,
    apply(d, f) { const e = f.g.pick(['gzip', 'br', 'deflate', 'identity']); d.headers['Content-Encoding'] = e; return `body.encoding(${e})`; },
  },
  {
    name: 'body.huge', weight: 1, applies: isForm,
    apply(d, f) {
      const n = f.g.pick([16 * 1024 - 200, 16 * 1024 + 1, 40_000, 200_000]);
      d.raw = Buffer.from(`${encoded(d)}&pad=${'a'.repeat(n)}`);
      return `body.huge(${d.raw.length})`;
    },
  },
  {
    name: 'body.chunked', weight: 1, applies: isForm,
    apply(d) { d.chunked = true; return 'body.chunked'; },
  },
  {
    name: 'body.empty', weight: 1, applies: isForm,
    apply(d) { d.fields = []; d.raw = undefined; return 'body.empty'; },
  },
  // ── csrf token (docs/security.md#csrf) ──
  {
    name: 'csrf.missing', weight: 3, applies: isForm,
    apply(d) { setCsrf(d, []); return 'csrf.missing'; },
  },
  {
    name: 'csrf.forged', weight: 2, applies: isForm,
    apply(d, f) {
      const real = d.fields.find(([k]) => k === 'csrf')?.[1] ?? 'x'.repeat(43);
      const v = f.g.pick([f.g.bytes(32).toString('base64url'), real.slice(0, -1), `${real.slice(0, -1)}${real.endsWith('A') ? 'B' : 'A'}`, real.toUpperCase(), `${real} `, 'x']);
      setCsrf(d, [v]);
      return 'csrf.forged';
    },
  },
  {
    name: 'csrf.otherToken', weight: 2, applies: isForm,
    apply(d, f) {
      const p = f.pages!;
      // Another session's token; on a pre-session form, a session's; on a session form, the pre-session one.
      const v = d.route.public ? p.sessions[d.ws].csrf : f.g.chance(0.5) ? p.pre.csrf : p.sessions[d.ws === 'A' ? 'B' : 'A'].csrf;
      setCsrf(d, [v]);
      return 'csrf.otherToken';
    },
  },
  {
    name: 'csrf.twice', weight: 1, applies: (d) => isForm(d) && d.fields.some(([k]) => k === 'csrf'),
    apply(d) { const v = d.fields.find(([k]) => k === 'csrf')![1]; setCsrf(d, [v, v]); return 'csrf.twice'; },
  },
  {
    name: 'pre.cookie', weight: 1, applies: (d) => isForm(d) && d.route.public,
    apply(d, f) {
      const v = f.g.pick([undefined, token43(f), 'x']);
      setCookie(d, 'sw_pre', v);
      return `pre.cookie(${v === undefined ? 'none' : v.length})`;
    },
  },
  // ── origin (docs/security.md#csrf) ──
  {
    name: 'origin', weight: 4, applies: isForm,
    apply(d, f) {
      const own = f.pages!.origin;
      const port = new URL(own).port;
      const [kind, origin, referer] = f.g.pick<[string, string | undefined, string | undefined]>([
        ['foreign', 'http://evil.example', undefined], ['null', 'null', undefined], ['absent', undefined, undefined],
        ['refererOnly', undefined, `${own}/settings/keys`], ['refererForeign', undefined, 'http://evil.example/settings/keys'], ['refererGarbage', undefined, 'not a url'],
        ['otherPort', `http://127.0.0.1:${Number(port) + 1}`, undefined], ['https', `https://127.0.0.1:${port}`, undefined], ['localhost', `http://localhost:${port}`, undefined],
        ['trailingSlash', `${own}/`, undefined], ['withPath', `${own}/settings`, undefined], ['foreignWithOwnReferer', 'http://evil.example', `${own}/settings/keys`],
      ]);
      delete d.headers.Origin;
      delete d.headers.Referer;
      if (origin !== undefined) d.headers.Origin = origin;
      if (referer !== undefined) d.headers.Referer = referer;
      return `origin.${kind}`;
    },
  },
];
