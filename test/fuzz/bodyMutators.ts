/**
 * The fuzzer's body mutations: wrong types, missing and unknown properties, long, huge and
 * unicode strings, invalid UTF-8, deep nesting, duplicate and prototype keys, number edges, broken
 * syntax, over-limit sizes, media types and encodings. Each marks what makes the body certainly
 * invalid (`claimAt`), which the oracle holds the schema validator to.
 */
import { BAD_UTF8, NUMBER_EDGES, UNICODE_EDGES } from './edges.js';
import { BadStr, clone, deref, Entries, getAt, isPlainObject, objectSchema, Raw, RawBytes, serialize, setAt, type Slot, stringSchema, typeOk } from './json.js';
import { MAX_DEPTH } from '../../src/http/body.js';
import { MiB } from '../../src/http/route.js';
import { bodyRoute, bodySlots, claimAt, ensureBody, hasBody, limitOf, type Mutator, WRONG_VALUES } from './mutatorKit.js';
import { codePointLength, type TSchema } from '../../src/http/schema.js';
import { asciiJson, show } from './util.js';

/** Mutations of the body: its values, shape, bytes, size and media type. */
export const BODY_MUTATORS: Mutator[] = [
  {
    name: 'body.wrongType', weight: 10, applies: (d) => hasBody(d) && bodySlots(d).length > 1,
    apply(d, f) {
      const slots = bodySlots(d).filter((s) => s.path.length > 0 && !(s.schema && deref(s.schema).kind === 'any'));
      if (!slots.length) return null;
      const s = f.g.pick(slots);
      const cands = WRONG_VALUES.filter((v) => !typeOk(s.schema, v));
      if (!cands.length) return null;
      const v = clone(f.g.pick(cands));
      d.body = setAt(d.body, s.path, v);
      if (s.schema) claimAt(d, s.path, v, `${s.path.join('.')} is ${asciiJson(v)}`);
      return `body.wrongType(${s.path.join('.')})`;
    },
  },
  {
    name: 'body.dropRequired', weight: 5, applies: hasBody,
    apply(d, f) {
      const cands: Array<[Slot, string]> = [];
      for (const s of bodySlots(d)) {
        const o = objectSchema(s);
        const v = getAt(d.body, s.path);
        if (!o || !isPlainObject(v)) continue;
        for (const [k, p] of Object.entries(o.properties as Record<string, TSchema>)) if (!p.optional && Object.hasOwn(v, k)) cands.push([s, k]);
      }
      if (!cands.length) return null;
      const [s, k] = f.g.pick(cands);
      const parent = getAt(d.body, s.path);
      d.body = setAt(d.body, [...s.path, k], undefined, true);
      d.certain.push((body) => (getAt(body, s.path) === parent && isPlainObject(parent) && !Object.hasOwn(parent, k) ? `${[...s.path, k].join('.')} is missing` : undefined));
      return `body.dropRequired(${[...s.path, k].join('.')})`;
    },
  },
  {
    name: 'body.unknownProp', weight: 5, applies: hasBody,
    apply(d, f) {
      const objs = bodySlots(d).filter((s) => isPlainObject(getAt(d.body, s.path)));
      if (!objs.length) return null;
      const s = f.g.pick(objs);
      const o = objectSchema(s);
      const v = getAt(d.body, s.path) as Record<string, unknown>;
      const props = o ? Object.keys(o.properties) : [];
      const key = f.g.pick(['extra', 'Subject', 'subject ', ' subject', '', '\u0000', 'x'.repeat(1000), 'hasOwnProperty', 'toString', 'valueOf',
        '__defineGetter__', 'prototype', '🙂', 'id', 'workspaceId', 'createdAt', 'number', 'object', `${props[0] ?? 'a'}\u200b`]);
      if (Object.hasOwn(v, key)) return null;
      v[key] = f.g.pick<unknown>([1, 'x', null, { a: 1 }, true]);
      if (o && o.additionalProperties === false && !props.includes(key)) {
        d.certain.push((body) => (getAt(body, s.path) === v && Object.hasOwn(v, key) ? `unknown property ${show(key.slice(0, 20))}` : undefined));
      }
      return `body.unknownProp(${show(key.slice(0, 16))})`;
    },
  },
  {
    name: 'body.longString', weight: 6, applies: hasBody,
    apply(d, f) {
      const slots = bodySlots(d).filter((s) => s.path.length > 0 && stringSchema(s));
      if (!slots.length) return null;
      const s = f.g.pick(slots);
      const sch = stringSchema(s)!;
      const L = sch.maxLength ?? 5000;
      const ch = f.g.pick(['a', 'é', '日', '😀', 'e\u0301', '\u0000']);
      const perChar = codePointLength(ch);
      const which = f.g.weighted([['max', 3], ['max+1', 4], ['2max', 2], ['min-1', 1]] as const);
      let cps = which === 'max' ? L : which === 'max+1' ? L + 1 : which === '2max' ? 2 * L : Math.max(0, (sch.minLength ?? 0) - 1);
      if (which === 'min-1' && (sch.minLength ?? 0) === 0) return null;
      const reps = Math.max(0, Math.floor(cps / perChar));
      cps = reps * perChar;
      const value = ch.repeat(reps);
      if (Buffer.byteLength(value) > limitOf(d) - 4096) return null;
      d.body = setAt(d.body, s.path, value);
      if (cps > L || cps < (sch.minLength ?? 0)) claimAt(d, s.path, value, `${s.path.join('.')} has ${cps} code points (${sch.minLength ?? 0}…${L})`);
      return `body.longString(${s.path.join('.')},${which},${JSON.stringify(ch)})`;
    },
  },
  {
    name: 'body.hugeString', weight: 1, heavy: true, applies: hasBody,
    apply(d, f) {
      const slots = bodySlots(d).filter((s) => s.path.length > 0);
      if (!slots.length) return null;
      const s = f.g.pick(slots);
      const limit = limitOf(d);
      const size = Math.min(limit - 8192, f.g.pick([64 * 1024, 512 * 1024, limit - 8192]));
      const value = f.g.chance(0.5) ? 'a'.repeat(size) : '日'.repeat(Math.floor(size / 3));
      d.body = setAt(d.body, s.path, value);
      const sch = stringSchema(s);
      if (!s.schema || (sch && sch.maxLength !== undefined && codePointLength(value) > sch.maxLength) || !typeOk(s.schema, value)) {
        if (s.schema) claimAt(d, s.path, value, `${s.path.join('.')} is a ${value.length}-character string`);
      }
      return `body.hugeString(${s.path.join('.')},${size})`;
    },
  },
  {
    name: 'body.unicode', weight: 8, applies: hasBody,
    apply(d, f) {
      const slots = bodySlots(d).filter((s) => s.path.length > 0 && (typeof getAt(d.body, s.path) === 'string' || !s.schema));
      if (!slots.length) return null;
      const s = f.g.pick(slots);
      const cur = getAt(d.body, s.path);
      const edge = f.g.pick(UNICODE_EDGES);
      const value = typeof cur === 'string' && f.g.chance(0.5) ? f.g.pick([`${edge}${cur}`, `${cur}${edge}`, cur.slice(0, 1) + edge + cur.slice(1)]) : edge;
      d.body = setAt(d.body, s.path, value);
      return `body.unicode(${s.path.join('.')},${show(edge.slice(0, 12))})`;
    },
  },
  {
    name: 'body.badUtf8', weight: 5, applies: hasBody,
    apply(d, f) {
      const bad = f.g.pick(BAD_UTF8);
      const slots = bodySlots(d).filter((s) => s.path.length > 0 && typeof getAt(d.body, s.path) === 'string');
      if (slots.length && f.g.chance(0.8)) {
        const s = f.g.pick(slots);
        const cur = getAt(d.body, s.path) as string;
        const v = new BadStr(cur.slice(0, 3), bad, cur.slice(3));
        d.body = setAt(d.body, s.path, v);
        claimAt(d, s.path, v, `invalid UTF-8 ${bad.toString('hex')} in ${s.path.join('.')}`);
        return `body.badUtf8(${s.path.join('.')},${bad.toString('hex')})`;
      }
      // bytes outside any string
      const text = serialize(d.body);
      d.body = new RawBytes(Buffer.concat([text.subarray(0, 1), bad, text.subarray(1)]));
      claimAt(d, [], d.body, `invalid UTF-8 ${bad.toString('hex')} between tokens`);
      return `body.badUtf8(between,${bad.toString('hex')})`;
    },
  },
  {
    name: 'body.deepNesting', weight: 4, applies: bodyRoute,
    apply(d, f) {
      ensureBody(d, f);
      const levels = f.g.pick([62, 63, 64, 65, 1000, 100_000]);
      const obj = f.g.chance(0.5);
      const nest = obj ? '{"a":'.repeat(levels) + '1' + '}'.repeat(levels) : '['.repeat(levels) + ']'.repeat(levels);
      const slots = isPlainObject(d.body) ? bodySlots(d).filter((s) => s.path.length > 0 && s.path.length < 4) : [];
      if (slots.length && f.g.chance(0.7)) {
        const s = f.g.pick(slots);
        const v = new Raw(nest);
        d.body = setAt(d.body, s.path, v);
        const depth = s.path.length + levels; // the body's own object is level 1
        if (depth > MAX_DEPTH) claimAt(d, s.path, v, `nested ${depth} levels`);
        return `body.deepNesting(${s.path.join('.')},${levels},${obj ? 'object' : 'array'})`;
      }
      d.body = new Raw(nest);
      if (levels > MAX_DEPTH) claimAt(d, [], d.body, `nested ${levels} levels`);
      return `body.deepNesting(root,${levels},${obj ? 'object' : 'array'})`;
    },
  },
  {
    name: 'body.duplicateKeys', weight: 4, applies: hasBody,
    apply(d, f) {
      const objs = bodySlots(d).filter((s) => { const v = getAt(d.body, s.path); return isPlainObject(v) && Object.keys(v).length > 0; });
      if (!objs.length) return null;
      const s = f.g.pick(objs);
      const v = getAt(d.body, s.path) as Record<string, unknown>;
      const entries: Array<[string, unknown]> = Object.entries(v);
      const i = f.g.int(entries.length);
      const [k, val] = entries[i];
      const other = f.g.pick<unknown>([val, 'dup', 12, null, { a: 1 }, typeof val === 'string' ? `${val}2` : val]);
      const mode = f.g.int(3);
      if (mode === 0) entries.push([k, other]); else if (mode === 1) entries.splice(i, 0, [k, other]); else entries.push([k, val], [k, other], [k, val]);
      d.body = setAt(d.body, s.path, new Entries(entries));
      return `body.duplicateKeys(${[...s.path, k].join('.')})`;
    },
  },
  {
    name: 'body.numberEdge', weight: 5, applies: hasBody,
    apply(d, f) {
      const slots = bodySlots(d).filter((s) => s.path.length > 0);
      const [text, validJson] = f.g.pick(NUMBER_EDGES);
      if (slots.length && f.g.chance(0.7)) {
        const s = f.g.pick(slots);
        const v = new Raw(text);
        d.body = setAt(d.body, s.path, v);
        if (!validJson) claimAt(d, s.path, v, `${text} is not JSON`);
        else if (s.schema && !typeOk(s.schema, JSON.parse(text))) claimAt(d, s.path, v, `${s.path.join('.')} is ${text}`);
        return `body.numberEdge(${s.path.join('.')},${text})`;
      }
      if (!isPlainObject(d.body)) return null;
      const k = f.g.pick(['limit', 'n', 'priority']);
      const v = new Raw(text);
      (d.body as Record<string, unknown>)[k] = v;
      if (!validJson) claimAt(d, [k], v, `${text} is not JSON`);
      return `body.numberEdge(newKey,${text})`;
    },
  },
  {
    name: 'body.protoKeys', weight: 4, applies: bodyRoute,
    apply(d, f) {
      ensureBody(d, f);
      const key = f.g.pick(['__proto__', 'constructor']);
      const payload = f.g.pick<unknown>([{ fuzzPolluted: true }, { prototype: { fuzzPolluted: true } }, 1, null, [{ fuzzPolluted: 1 }]]);
      const objs = isPlainObject(d.body) ? bodySlots(d).filter((s) => isPlainObject(getAt(d.body, s.path))) : [];
      if (!objs.length) { d.body = new Entries([[key, payload]]); claimAt(d, [], d.body, `${key} key`); return `body.protoKeys(root,${key})`; }
      const s = f.g.pick(objs);
      const v = getAt(d.body, s.path) as Record<string, unknown>;
      const entries: Array<[string, unknown]> = Object.entries(v);
      entries.splice(f.g.int(entries.length + 1), 0, [key, payload]);
      const e = new Entries(entries);
      d.body = setAt(d.body, s.path, e);
      claimAt(d, s.path, e, `${key} key`);
      return `body.protoKeys(${s.path.join('.') || 'root'},${key})`;
    },
  },
  {
    name: 'body.notObject', weight: 3, applies: bodyRoute,
    apply(d, f) {
      ensureBody(d, f);
      const t = f.g.pick(['[]', '[{}]', '"str"', '42', 'null', 'true', '[{"subject":"x"}]', '"{\\"subject\\":\\"x\\"}"']);
      d.body = new Raw(t);
      claimAt(d, [], d.body, `the body is ${t}`);
      return `body.notObject(${t})`;
    },
  },
  {
    name: 'body.randomBytes', weight: 3, applies: bodyRoute,
    apply(d, f) {
      ensureBody(d, f);
      const n = f.g.pick([1, 7, 64, 512, 4096]);
      let b = f.g.bytes(n);
      if (f.g.chance(0.4)) b = Buffer.concat([Buffer.from('{"'), b]);
      d.body = new RawBytes(b);
      return `body.randomBytes(${b.length})`;
    },
  },
  {
    name: 'body.syntax', weight: 4, applies: bodyRoute,
    apply(d, f) {
      ensureBody(d, f);
      const text = serialize(d.body).toString('utf8');
      const variants: Array<[string, Buffer, boolean]> = [ // name, bytes, certainly invalid
        ['truncated', Buffer.from(text.slice(0, Math.max(1, text.length - 1 - f.g.int(Math.max(1, text.length - 1))))), true],
        ['trailingGarbage', Buffer.from(`${text}x`), true],
        ['twoValues', Buffer.from(`${text}${text}`), true],
        ['trailingComma', Buffer.from(text.replace(/}$/, ',}')), true],
        ['singleQuotes', Buffer.from(text.replace(/"/g, "'")), true],
        ['comment', Buffer.from(`/* c */${text}`), true],
        ['bom', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]), false],
        ['utf16le', Buffer.from(text, 'utf16le'), true],
        ['whitespace', Buffer.from(` \n\t${text}\r\n `), false],
        ['empty', Buffer.alloc(0), false],
        ['spaces', Buffer.from('   '), true],
        ['nul', Buffer.from(`${text}\u0000`), true],
        ['undefined', Buffer.from('{"a":undefined}'), true],
      ];
      const [name, bytes, invalid] = f.g.pick(variants);
      d.body = new RawBytes(bytes);
      if (invalid && !bytes.equals(Buffer.from(text))) claimAt(d, [], d.body, `syntax: ${name}`);
      return `body.syntax(${name})`;
    },
  },
  {
    name: 'body.overLimit', weight: 0.6, heavy: true, applies: bodyRoute,
    apply(d, f) {
      ensureBody(d, f);
      const limit = limitOf(d);
      if (limit > 2 * MiB && !f.g.chance(0.25)) return null; // 16 MiB uploads: rarely
      const text = serialize(d.body);
      const pad = limit + 1 - text.length;
      if (pad <= 0) return null;
      d.body = new RawBytes(Buffer.concat([Buffer.alloc(pad, 0x20), text]));
      if (f.g.chance(0.4)) d.chunked = true;
      return `body.overLimit(${limit + 1}${d.chunked ? ',chunked' : ''})`;
    },
  },
  {
    name: 'body.contentType', weight: 4, applies: bodyRoute,
    apply(d, f) {
      ensureBody(d, f);
      const ct = f.g.pick([undefined, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1',
        'application/json; charset=UTF-8', 'application/json;charset="utf-8"', 'APPLICATION/JSON', 'application/jsonp', 'application/vnd.api+json',
        'application/json; foo=bar', '*/*', '', 'application/json, text/plain', 'application/json; charset=utf-16', 'json', 'application/json;;',
        'text/json', 'application/json\t', 'application/problem+json']);
      if (ct === undefined) delete d.headers['Content-Type']; else d.headers['Content-Type'] = ct;
      return `body.contentType(${show(ct ?? '(none)')})`;
    },
  },
  {
    name: 'body.contentEncoding', weight: 1.5, applies: bodyRoute,
    apply(d, f) {
      ensureBody(d, f);
      const enc = f.g.pick(['gzip', 'deflate', 'br', 'identity', 'GZIP', 'gzip, identity', 'x-unknown', '']);
      d.headers['Content-Encoding'] = enc;
      return `body.contentEncoding(${enc})`;
    },
  },
  {
    name: 'body.chunked', weight: 1.5, applies: bodyRoute,
    apply(d, f) { ensureBody(d, f); d.chunked = true; return 'body.chunked'; },
  },
  {
    name: 'body.onRead', weight: 1, applies: (d) => !!d.route && !d.route.body,
    apply(d, f) {
      d.body = f.g.pick<unknown>([{ a: 1 }, new RawBytes(f.g.bytes(100)), new Raw('['.repeat(1000))]);
      d.headers['Content-Type'] = 'application/json';
      return 'body.onRead';
    },
  },
];
