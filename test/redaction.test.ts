/**
 * Redaction of a credential from live-check answers (src/areas/sources/redaction.ts): every form of the
 * secret an upstream may echo — raw, JSON-escaped (`\"`, `\/`, `\uXXXX` in any hex case),
 * URL-encoded (`%XX` upper or lower, `+` for a space, UTF-8 bytes), base64 (standard and
 * URL-safe, with and without padding, of the secret and of `username:secret`, inside a longer
 * encoded string at each byte alignment), in any letter case — and nothing else; linear time
 * on adversarial input; the bounded prefix redaction equal to redacting everything then cutting.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cutBytes, MIN_FORM_LENGTH, REDACTED, Redactor, secretForms } from '../src/areas/sources/redaction.js';
import { mulberry32 } from './helpers/prng.js';

const SECRET = 'Tok/en+ "Q" é€😀~1';
const b64 = (x: string): string => Buffer.from(x, 'utf8').toString('base64');
const b64url = (x: string): string => Buffer.from(x, 'utf8').toString('base64url');
/** The JSON escape of every UTF-16 unit, hex in `hexCase`. */
const uEscaped = (x: string, upper: boolean): string =>
  Array.from({ length: x.length }, (_, i) => `\\u${x.charCodeAt(i).toString(16).padStart(4, '0')[upper ? 'toUpperCase' : 'toLowerCase']()}`).join('');

const redactor = new Redactor({ secret: SECRET, username: 'ann', headerValues: [`Bearer ${SECRET}`] });

test('every whole form of the secret is replaced, in any letter case', () => {
  const forms: Record<string, string> = {
    raw: SECRET, lower: SECRET.toLowerCase(), upper: SECRET.toUpperCase(), header: `Bearer ${SECRET}`,
    'json (JSON.stringify, inside the quotes)': JSON.stringify(SECRET).slice(1, -1),
    'json with \\/': JSON.stringify(SECRET).slice(1, -1).replaceAll('/', '\\/'),
    'json \\uXXXX lower hex': uEscaped(SECRET, false), 'json \\uXXXX upper hex': uEscaped(SECRET, true),
    'json ASCII-only (non-ASCII as \\u)': JSON.stringify(SECRET).slice(1, -1).replace(/[^\x00-\x7f]/g, (c) => uEscaped(c, false)),
    'url %XX upper': encodeURIComponent(SECRET), 'url %xx lower': encodeURIComponent(SECRET).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
    'url + for space': encodeURIComponent(SECRET).replaceAll('%20', '+'), 'url every byte encoded': [...Buffer.from(SECRET)].map((x) => `%${x.toString(16).padStart(2, '0')}`).join(''),
    'url, lower-cased': encodeURIComponent(SECRET).toLowerCase(), 'url inside json': JSON.stringify(encodeURIComponent(SECRET)).slice(1, -1).replaceAll('%', '\\u0025'),
    base64: b64(SECRET), 'base64 unpadded': b64(SECRET).replace(/=+$/, ''), base64url: b64url(SECRET), 'base64url padded': b64(SECRET).replaceAll('+', '-').replaceAll('/', '_'),
    'base64 of username:secret': b64(`ann:${SECRET}`), 'base64url of username:secret': b64url(`ann:${SECRET}`),
    'base64 url-encoded': encodeURIComponent(b64(SECRET)), 'base64 json-escaped': b64(SECRET).replaceAll('/', '\\/'),
  };
  for (const [name, form] of Object.entries(forms)) {
    assert.equal(redactor.redact(`before ${form} after`), `before ${REDACTED} after`, name);
    assert.equal(redactor.redact(form), REDACTED, name);
  }
});

test('base64 inside a longer encoded string: the characters that depend only on the secret, at each alignment', () => {
  for (const [before, after] of [['', 'tail'], ['x', ''], ['xy', 'z'], ['xyz', 'zz'], ['user:', ''], ['prefix-of-some-length', 'and-a-suffix']]) {
    for (const enc of [b64, b64url]) {
      const whole = enc(before + SECRET + after);
      const k = Buffer.byteLength(before);
      const from = Math.ceil((8 * k) / 6);
      const to = Math.floor((8 * (k + Buffer.byteLength(SECRET))) / 6);
      const out = redactor.redact(whole);
      // At least the secret's own characters are gone; what is left is only neighbours' characters.
      assert.ok(out.startsWith(whole.slice(0, from)) && out.endsWith(whole.slice(to)), `${before}|${after}: ${out}`);
      assert.ok(out.length <= from + REDACTED.length + (whole.length - to), `${before}|${after}: ${out}`);
      assert.ok(out.includes(REDACTED), `${before}|${after}`);
    }
  }
});

test('a basic credential: base64 of username:secret redacted whole, with the Basic prefix', () => {
  const r = new Redactor({ secret: 'pa:ss-word', username: 'ann', headerValues: [`Basic ${b64('ann:pa:ss-word')}`] });
  assert.equal(r.redact(`{"authorization":"Basic ${b64('ann:pa:ss-word')}"}`), `{"authorization":"${REDACTED}"}`);
  assert.equal(r.redact(`token=${encodeURIComponent(b64('ann:pa:ss-word'))}&x=1`), `token=${REDACTED}&x=1`);
});

test('text without the secret is returned unchanged, escapes and encodings included', () => {
  const texts = [
    '', 'plain text', '{"a":"\\u0041\\n\\/\\"","b":"%41%2F+%zz%"}', 'é€😀 and \\uD83D\\uDE00', 'Tok/en+ "Q" é€😀~', 'tok', '\\', '%', '%C3', '%E2%82', '\\u12',
    b64('unrelated bytes'), 'Bearer other',
  ];
  for (const t of texts) assert.equal(redactor.redact(t), t, t);
});

test('overlapping and touching matches become one [redacted]; each separate one is replaced', () => {
  assert.equal(redactor.redact(`${SECRET}${SECRET}`), REDACTED);
  assert.equal(redactor.redact(`${SECRET}.${encodeURIComponent(SECRET)}`), `${REDACTED}.${REDACTED}`);
  assert.equal(redactor.redact(`Bearer ${SECRET}`), REDACTED);
});

test(`forms shorter than ${MIN_FORM_LENGTH} characters are not searched for; the header value holding one is`, () => {
  assert.deepEqual(secretForms({ secret: 'abc', headerValues: ['Bearer abc'] }), ['Bearer abc', 'YWJj']);
  const r = new Redactor({ secret: 'abc', headerValues: ['Bearer abc'] });
  assert.equal(r.redact('abc bearer ABC YWJj'), `abc ${REDACTED} ${REDACTED}`);
  assert.equal(new Redactor(undefined).redact(SECRET), SECRET);
});

test('linear time: adversarial texts of 1 MiB are redacted quickly (generous bound)', () => {
  // A naive search for 'aaa…ab' in 'aaa…a' costs text × secret steps (4 billion here).
  const long = new Redactor({ secret: `${'a'.repeat(3000)}b` });
  const cases: Array<[Redactor, string]> = [
    [long, 'a'.repeat(1 << 20)],
    [long, `${'a'.repeat(3000)}b`.repeat(349)],
    [redactor, '\\u0041%41+'.repeat(104_857)], // every decoding has work at every character
    [redactor, SECRET.repeat(55_000)],
  ];
  for (const [r, text] of cases) {
    const t0 = performance.now();
    r.redact(text);
    const ms = performance.now() - t0;
    assert.ok(ms < 5000, `${ms} ms`);
  }
});

test('redactPrefix equals redacting everything then cutting to the byte limit (random texts)', () => {
  const rnd = mulberry32(7);
  const pieces = [SECRET, SECRET.toUpperCase(), encodeURIComponent(SECRET), uEscaped(SECRET, true), b64(SECRET), b64(`x${SECRET}`), 'é', '€', '😀', 'x', '%', '\\', '+', ' ', 'ab', '\\u00', '%E2'];
  for (let n = 0; n < 300; n++) {
    const parts: string[] = [];
    const count = Math.floor(rnd() * 600);
    for (let i = 0; i < count; i++) parts.push(pieces[Math.floor(rnd() * pieces.length)]);
    const text = parts.join('');
    // A small reach relative to the text exercises the growing-window path.
    const limit = Math.floor(rnd() * 400);
    assert.deepEqual(redactor.redactPrefix(text, limit), cutBytes(redactor.redact(text), limit), `seed 7, case ${n}`);
  }
  // A long text full of the secret: the output shrinks, the whole text is needed.
  const full = SECRET.repeat(20_000);
  assert.deepEqual(redactor.redactPrefix(full, 16_384), { text: REDACTED, truncated: false });
  const tail = `${SECRET.repeat(20_000)}${'z'.repeat(20_000)}`;
  assert.deepEqual(redactor.redactPrefix(tail, 16_384), { text: `${REDACTED}${'z'.repeat(16_374)}`, truncated: true });
});

test('cutBytes cuts on a character boundary', () => {
  assert.deepEqual(cutBytes('€€', 5), { text: '€', truncated: true });
  assert.deepEqual(cutBytes('€€', 6), { text: '€€', truncated: false });
  assert.deepEqual(cutBytes('a😀', 4), { text: 'a', truncated: true });
});
