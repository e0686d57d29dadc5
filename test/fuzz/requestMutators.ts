/**
 * The fuzzer's mutations of everything but the body: query strings, path parameters (weird,
 * long, badly escaped, another workspace's), keys and scopes, idempotency keys, headers and
 * methods.
 */
import { DATE_EDGES, DAY_EDGES, QUERY_NUMBERS, UNICODE_EDGES } from './edges.js';
import { type KeyInfo, NO_BODY, paramKind } from './types.js';
import { hasBody, type Mutator } from './mutatorKit.js';
import { deref, isPlainObject, RawBytes } from './json.js';
import type { TSchema, TString } from '../../src/http/schema.js';
import { encodeComponent, listKey, safeDecode, show } from './util.js';

/** Mutations of the rest of the request: query string, path, key, idempotency, headers, method. */
export const REQUEST_MUTATORS: Mutator[] = [
  // ── query ──
  {
    name: 'query.repeat', weight: 3, applies: (d) => !!d.route?.query,
    apply(d, f) {
      const props = Object.keys(d.route!.query!.properties);
      const k = f.g.pick(props);
      const pairs = typeof d.query === 'string' ? [] : d.query;
      const v = f.validQuery(d, k) ?? '1';
      d.query = [...pairs.filter(([x]) => x !== k), [k, v], [k, f.validQuery(d, k) ?? v]];
      return `query.repeat(${k})`;
    },
  },
  {
    name: 'query.unknown', weight: 3, applies: (d) => !!d.route,
    apply(d, f) {
      const pairs = typeof d.query === 'string' ? [] : d.query;
      const k = f.g.pick(['foo', '__proto__', 'constructor', 'limit[]', 'hasOwnProperty', 'Limit', 'cursor ', '', 'a'.repeat(300), 'ü', 'q[0]', 'toString']);
      d.query = [...pairs, [k, f.g.pick(['1', 'x', ''])]];
      return `query.unknown(${JSON.stringify(k.slice(0, 12))})`;
    },
  },
  {
    name: 'query.huge', weight: 1, applies: (d) => !!d.route,
    apply(d, f) {
      const props = d.route!.query ? Object.keys(d.route!.query.properties) : ['x'];
      const k = f.g.pick(props);
      const n = f.g.pick([2049, 8000, 15_000, 17_000, 100_000]);
      const pairs = typeof d.query === 'string' ? [] : d.query.filter(([x]) => x !== k);
      d.query = [...pairs, [k, f.g.pick(['a', '日', '%'])!.repeat(n)]];
      return `query.huge(${k},${n})`;
    },
  },
  {
    name: 'query.typeEdge', weight: 4, applies: (d) => !!d.route?.query,
    apply(d, f) {
      const props = Object.entries(d.route!.query!.properties as Record<string, TSchema>);
      const [k, s] = f.g.pick(props);
      const kind = deref(s).kind;
      let v: string;
      if (kind === 'integer') v = f.g.pick(QUERY_NUMBERS);
      else if (kind === 'boolean') v = f.g.pick(['TRUE', '1', 'yes', '', 'false ', 'null']);
      else if ((s as TString).format === 'date-time') v = f.g.pick(DATE_EDGES);
      else if (k === 'from' || k === 'to') v = f.g.pick(DAY_EDGES);
      else if ((s as TString).enum) v = f.g.pick([((s as TString).enum![0] ?? '').toUpperCase(), ` ${(s as TString).enum![0]}`, 'unknown', '', 'open,solved']);
      else v = f.g.pick([...UNICODE_EDGES.slice(0, 12), '', ' ', '*', '%', "'", '"', '\\', 'a'.repeat(501), 'x'.repeat(65)]);
      const pairs = typeof d.query === 'string' ? [] : d.query.filter(([x]) => x !== k);
      d.query = [...pairs, [k, v]];
      return `query.typeEdge(${k},${show(v.slice(0, 20))})`;
    },
  },
  {
    name: 'query.percent', weight: 2, applies: (d) => !!d.route,
    apply(d, f) {
      const base = typeof d.query === 'string' ? d.query : d.query.map(([k, v]) => `${encodeComponent(k)}=${encodeComponent(v)}`).join('&');
      const k = d.route!.query ? f.g.pick(Object.keys(d.route!.query.properties)) : 'x';
      const raw = f.g.pick([`${k}=%ZZ`, `${k}=%`, `${k}=%ud800`, `${k}=%ED%A0%80`, `${k}=%C0%AF`, `${k}=%00`, `${k}=a+b`, `${k}=%FF%FE`, '&&&', '=x', k, `${k}=`, `${k}==`,
        `${k}=1&`, `&${k}=1`, `${k}=%F0%9F%98%80`, `${k}%00=1`, `${k}=%25`, `${k}=1;${k}=2`, '#frag', `${k}=\u00e9`.replace('\u00e9', '%E9')]);
      d.query = base && f.g.chance(0.5) ? `${base}&${raw}` : raw;
      return `query.percent(${show(raw.slice(0, 20))})`;
    },
  },
  {
    name: 'query.cursor', weight: 4, applies: (d) => !!d.route?.query?.properties.cursor,
    apply(d, f) {
      const route = d.route!;
      const mine = f.poolsOf(d.key.ws ?? 'A');
      const theirs = f.poolsOf(d.key.ws === 'B' ? 'A' : 'B');
      const lk = listKey(route, d.params);
      const own = mine.cursors.get(lk) ?? [];
      const otherList = [...mine.cursors.entries()].filter(([p]) => p !== lk).flatMap(([, c]) => c);
      const foreign = [...theirs.cursors.entries()].filter(([p]) => p.startsWith(route.path)).flatMap(([, c]) => c);
      const options: Array<[string, string]> = [['random', f.g.bytes(12).toString('base64url') + '.' + f.g.bytes(16).toString('base64url')], ['dot', '.'], ['noMac', 'YWJj.'],
        ['noPayload', '.YWJj'], ['long', 'a'.repeat(2049)], ['unicode', '日本.語'], ['emptyish', ' '], ['json', '{"id":1}']];
      if (own.length) {
        const c = f.g.pick(own);
        const i = f.g.int(c.length);
        const flipped = c.slice(0, i) + (c[i] === 'A' ? 'B' : 'A') + c.slice(i + 1);
        if (flipped !== c) options.push(['tampered', flipped]);
        options.push(['truncated', c.slice(0, -2)], ['payloadSwap', `${Buffer.from('\uffff').toString('base64url')}${c.slice(c.indexOf('.'))}`]);
      }
      if (otherList.length) options.push(['otherList', f.g.pick(otherList)]);
      if (foreign.length) options.push(['foreign', f.g.pick(foreign)], ['foreign', f.g.pick(foreign)]);
      const [kind, c] = f.g.pick(options);
      const pairs = typeof d.query === 'string' ? [] : d.query.filter(([x]) => x !== 'cursor');
      d.query = [...pairs, ['cursor', c]];
      d.cursorClaim = { value: c, kind };
      return `query.cursor(${kind})`;
    },
  },
  // ── path ──
  {
    name: 'path.weird', weight: 5, applies: (d) => !!d.route && Object.keys(d.params).length > 0,
    apply(d, f) {
      const p = f.g.pick(Object.keys(d.params));
      const real = safeDecode(d.params[p]);
      const v = f.g.pick(['%00', `${d.params[p]}%00`, '..%2F..%2F', '..%2f', '%2e%2e', '%2e', '..%5C', '%2F', 'null', 'undefined', '__proto__', 'constructor', 'hasOwnProperty',
        'toString', '0', '-1', '%20', `${d.params[p]}%20`, '%F0%9F%98%80', '%E2%80%AE', `${d.params[p]}.json`, "'", '%27%20OR%201%3D1', '*', '%2A', `${d.params[p]}%0A`,
        '%C0%AF', '%u002F', '$', '~', `${d.params[p]};x`, '%252F']);
      d.params[p] = v;
      d.targetIds = [real];
      return `path.weird(${p},${show(v.slice(0, 20))})`;
    },
  },
  {
    name: 'path.long', weight: 2, applies: (d) => !!d.route && Object.keys(d.params).length > 0,
    apply(d, f) {
      const p = f.g.pick(Object.keys(d.params));
      const n = f.g.pick([201, 1024, 2048, 8000, 20_000]);
      d.params[p] = f.g.pick(['a', '0', '%41', '%F0%9F%98%80'])!.repeat(n);
      return `path.long(${p},${n})`;
    },
  },
  {
    name: 'path.badEscape', weight: 2, applies: (d) => !!d.route && Object.keys(d.params).length > 0,
    apply(d, f) {
      const p = f.g.pick(Object.keys(d.params));
      d.params[p] = f.g.pick(['%', '%Z', '%ZZ', 'abc%', '%E0%A4%A', '%ED%A0%80', '%FF', '%C3']);
      return `path.badEscape(${p},${d.params[p]})`;
    },
  },
  {
    name: 'path.foreign', weight: 6, applies: (d) => !!d.route && Object.keys(d.params).some((p) => paramKind(p)),
    apply(d, f) {
      const p = f.g.pick(Object.keys(d.params).filter((x) => paramKind(x)));
      const kind = paramKind(p)!;
      const theirs = f.poolsOf(d.ws === 'A' ? 'B' : 'A')[kind];
      const random = !theirs.length || f.g.chance(0.2);
      const id = random ? f.g.uuid() : f.g.pick(theirs);
      d.params[p] = encodeURIComponent(id);
      d.targetIds = [id];
      return `path.foreign(${p},${random ? 'random' : 'otherWorkspace'})`;
    },
  },
  {
    name: 'body.foreignId', weight: 4, applies: (d) => hasBody(d) && isPlainObject(d.body) && (d.routeKey === 'POST /api/v1/issues' || d.routeKey === 'POST /api/v1/sources/{sourceId}/checks'),
    apply(d, f) {
      const other = f.poolsOf(d.ws === 'A' ? 'B' : 'A');
      const b = d.body as Record<string, unknown>;
      if (d.routeKey === 'POST /api/v1/issues') {
        if (!other.conversation.length) return null;
        b.conversationId = f.g.pick(other.conversation);
        d.notOk = 'conversationId belongs to another workspace';
        return 'body.foreignId(conversationId)';
      }
      const eps = [...other.endpoints.values()].flat();
      if (!eps.length) return null;
      b.endpointId = f.g.pick(eps);
      d.notOk = 'endpointId belongs to another workspace';
      return 'body.foreignId(endpointId)';
    },
  },
  // ── headers ──
  {
    name: 'auth', weight: 5, applies: (d) => !!d.route && d.route.scope !== null,
    apply(d, f) {
      const own = f.otherKey(d.ws); // the draft's workspace's full key
      const token = String(own.header).replace(/^Bearer /, '');
      const widget = f.poolsOf('A').widgetKeys;
      const variants: Array<[string, KeyInfo]> = [
        ['none', { role: 'none' }],
        ['expired', f.keyRole('expired')],
        ['revoked', f.keyRole('revoked')],
        ['wellFormedUnknown', { role: 'garbage', header: `Bearer svck_${'A'.repeat(43)}` }],
        ['garbage', { role: 'garbage', header: `Bearer ${f.g.bytes(20).toString('base64')}` }],
        ['basic', { role: 'garbage', header: `Basic ${Buffer.from(`x:${token}`).toString('base64')}` }],
        ['bare', { role: 'garbage', header: token }],
        ['extraToken', { role: 'garbage', header: `Bearer ${token} extra` }],
        ['truncated', { role: 'garbage', header: `Bearer ${token.slice(0, -1)}` }],
        ['empty', { role: 'garbage', header: '' }],
        ['bearerOnly', { role: 'garbage', header: 'Bearer ' }],
        ['huge', { role: 'garbage', header: `Bearer ${'x'.repeat(8000)}` }],
        ['latin1', { role: 'garbage', header: `Bearer ${token.slice(0, 10)}\u00e9${token.slice(11)}` }],
        ['lowercaseScheme', { ...own, header: `bearer ${token}` }],
        ['twoSpaces', { ...own, header: `Bearer  ${token}` }],
        ['trailingSpace', { ...own, header: `Bearer ${token} ` }],
      ];
      if (widget.length) variants.push(['widgetKey', { role: 'garbage', header: `Bearer ${f.g.pick(widget)}` }]);
      const [name, key] = f.g.pick(variants);
      d.key = key;
      return `auth.${name}`;
    },
  },
  {
    name: 'scope.limited', weight: 3, applies: (d) => !!d.route && d.route.scope !== null && d.ws === 'A',
    apply(d, f) { d.key = f.limited(); return `scope.limited(${d.key.scopes?.join(',')})`; },
  },
  {
    name: 'auth.otherWorkspaceKey', weight: 3, applies: (d) => !!d.route && d.route.scope !== null && Object.keys(d.params).some((p) => paramKind(p)) && d.targetIds.length > 0,
    apply(d, f) {
      // The ids stay those of the draft's workspace; the key becomes the other workspace's.
      d.key = f.otherKey(d.ws === 'A' ? 'B' : 'A');
      return 'auth.otherWorkspaceKey';
    },
  },
  {
    name: 'idem.fresh', weight: 1.5, applies: (d) => d.method === 'POST' && !!d.route,
    apply(d, f) { d.headers['Idempotency-Key'] = f.freshIdemKey(); return 'idem.fresh'; },
  },
  {
    name: 'idem.invalid', weight: 3, applies: (d) => d.method === 'POST' && !!d.route,
    apply(d, f) {
      const v = f.g.pick(['k'.repeat(256), '', ' ', '\u00e9t\u00e9', 'a\tb', 'x'.repeat(1000), 'ok\u00ff']);
      d.headers['Idempotency-Key'] = v;
      return `idem.invalid(${show(v.slice(0, 10))},${v.length})`;
    },
  },
  {
    name: 'idem.replay', weight: 3,
    applies: (d, f) => d.method === 'POST' && f.idemEntries().some((e) => e.role === (d.ws === 'A' ? 'main' : 'other') && f.routeOf(e.method, e.path) === d.route),
    apply(d, f) {
      const role = d.ws === 'A' ? 'main' : 'other';
      const e = f.g.pick(f.idemEntries().filter((x) => x.role === role && f.routeOf(x.method, x.path) === d.route));
      const route = f.routeOf(e.method, e.path);
      if (!route) return null;
      Object.assign(d, {
        route, routeKey: `${route.method} ${route.path}`, method: e.method, rawPath: e.path, query: e.query, headers: { ...e.headers },
        body: e.body === undefined ? NO_BODY : new RawBytes(e.body), key: f.otherKey(d.ws), certain: [], handlerExpect: undefined, notOk: undefined,
      });
      delete d.headers.Authorization; delete d.headers['Content-Length'];
      if (d.headers['Transfer-Encoding']) { delete d.headers['Transfer-Encoding']; d.chunked = true; }
      d.idem = { kind: 'replay', entry: e };
      return 'idem.replay';
    },
  },
  {
    name: 'idem.reuse', weight: 3, applies: (d, f) => d.method === 'POST' && !!d.route && f.idemEntries().some((e) => e.role === (d.ws === 'A' ? 'main' : 'other')),
    apply(d, f) {
      const role = d.ws === 'A' ? 'main' : 'other';
      const e = f.g.pick(f.idemEntries().filter((x) => x.role === role));
      d.headers['Idempotency-Key'] = e.key;
      d.idem = { kind: 'reuse', entry: e };
      return 'idem.reuse';
    },
  },
  {
    name: 'header.apiVersion', weight: 2, applies: (d) => !!d.route,
    apply(d, f) {
      const v = f.g.pick(['2026-06-28', '', 'latest', '2026-06-29 ', ' 2026-06-29', '2026-06-29, 2026-06-29', '2025-01-01', '1', '2026-06-29\u00a0']);
      d.headers['Api-Version'] = v;
      return `header.apiVersion(${show(v)})`;
    },
  },
  {
    name: 'header.requestId', weight: 2, applies: (d) => !!d.route,
    apply(d, f) {
      const v = f.g.pick(['r'.repeat(128), 'r'.repeat(129), '', 'a b', 'caf\u00e9', 'x'.repeat(4000), '"quoted"', '<script>', '%00']);
      d.headers['X-Request-Id'] = v;
      return `header.requestId(${v.length})`;
    },
  },
  {
    name: 'header.duplicates', weight: 1, applies: (d) => !!d.route,
    apply(d, f) {
      const h = f.g.pick(['Content-Type', 'Api-Version', 'Idempotency-Key', 'X-Request-Id', 'Authorization']);
      const cur = h === 'Authorization' ? d.key.header : d.headers[h];
      const first = typeof cur === 'string' ? cur : 'application/json';
      const vals = [first, f.g.pick(['text/plain', first, 'x', '2026-06-29', 'Bearer nope'])];
      if (h === 'Authorization') d.key = { ...d.key, header: vals }; else d.headers[h] = vals;
      d.noOracle = true;
      return `header.duplicates(${h})`;
    },
  },
  {
    name: 'header.misc', weight: 1.5, applies: (d) => !!d.route,
    apply(d, f) {
      const [k, v] = f.g.pick<[string, string]>([['Accept', 'text/html'], ['Accept', ''], ['Accept-Encoding', 'gzip, br'], ['Expect', '100-continue'], ['Connection', 'close'],
        ['Cookie', 'a=b; __proto__=x'], ['X-Forwarded-For', '10.0.0.1, 127.0.0.1'], ['Origin', 'http://evil.example'], ['Range', 'bytes=0-10'],
        ['If-None-Match', '*'], ['X-HTTP-Method-Override', 'DELETE'], ['Host', 'evil.example'], ['Content-Language', '\u00e9'], ['Upgrade', 'websocket']]);
      d.headers[k] = v;
      if (k === 'Expect') d.noOracle = true;
      return `header.misc(${k})`;
    },
  },
  {
    name: 'method.other', weight: 2, applies: (d) => !!d.route,
    apply(d, f) {
      const m = f.g.pick(['GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'OPTIONS', 'HEAD', 'TRACE']);
      if (m === d.method) return null;
      d.method = m;
      d.handlerExpect = undefined;
      return `method.other(${m})`;
    },
  },
];
