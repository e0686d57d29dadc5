/**
 * The requests the fast path takes (src/http/fastPath.ts, docs/decisions.md#a-fast-path-for-plain-reads),
 * and their parser.
 *
 * Grammar accepted (RFC 9112 §3 and §5, narrowed): `GET SP origin-form SP HTTP/1.1 CRLF`,
 * then header lines `token ":" OWS value OWS CRLF` whose value has only visible ASCII, space
 * and tab; at most {@link MAX_FIELDS} lines, the whole head at most {@link MAX_HEAD} bytes,
 * exactly one `Host`, no name twice; no `Content-Length`, `Transfer-Encoding`, `Expect`,
 * `Upgrade`, nor a `Connection` other than `keep-alive`. Anything else is handed over to
 * node:http.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { FastRequest } from './fastPath.js';

/** The largest head taken (bytes, CRLFs included); node:http's own limit is 16 KiB. */
export const MAX_HEAD = 8 * 1024;
/** The most header lines taken. */
const MAX_FIELDS = 64;
/** Token characters (RFC 9110 §5.6.2), as a regular-expression class. */
export const TCHAR = "[!#$%&'*+\\-.^_`|~0-9A-Za-z]";
/**
 * A plain read's head (the grammar above, but for the field rules): `GET`, an origin-form
 * target of visible ASCII, `HTTP/1.1`, then `token ":" value` lines whose value has visible
 * ASCII, space and tab only. Linear: a line ends only at CRLF, which no class matches.
 */
const PLAIN_HEAD = new RegExp(`^GET /[\\x21-\\x7e]* HTTP/1\\.1(?:\\r\\n${TCHAR}+:[\\t\\x20-\\x7e]*)*$`);
/** Headers after which the request is not a plain read (and goes to node:http). */
const REFUSED = new Set(['content-length', 'transfer-encoding', 'expect', 'upgrade', 'te', 'trailer', 'http2-settings']);

/**
 * A header field set by lower-case name. Its prototype is an empty object with no prototype:
 * no inherited name (`constructor`, `__proto__`'s accessor) can be mistaken for a field or
 * set the prototype, and — unlike an `Object.create(null)` object, which V8 keeps as a hash
 * table — the object stays in V8's fast mode (the read path's cost).
 */
const Fields = function Fields() { /* fields are added by parseHead */ } as unknown as new () => Record<string, string>;
Fields.prototype = Object.create(null) as object;

/**
 * Parses a request head (latin1 text, without its final CRLF CRLF) if it is a plain read: the
 * grammar (module comment) is checked by one linear regular expression ({@link PLAIN_HEAD});
 * then each line's name and value are cut out, and the field rules checked.
 * @returns the request, or null when it is not one (the connection is then handed over).
 */
export function parseHead(head: string, socket: Socket): FastRequest | null {
  if (!PLAIN_HEAD.test(head)) return null;
  const n = head.length;
  let eol = head.indexOf('\r\n');
  if (eol === -1) eol = n;
  const url = head.slice(4, eol - 9);
  const headers = new Fields();
  let host = false;
  let fields = 0;
  let pos = eol + 2;
  while (pos < n) {
    if (++fields > MAX_FIELDS) return null;
    let end = head.indexOf('\r\n', pos);
    if (end === -1) end = n;
    // A name is a token (no ':'), so the line's first ':' ends it.
    const colon = head.indexOf(':', pos);
    const key = head.slice(pos, colon).toLowerCase();
    let from = colon + 1;
    let to = end;
    while (from < to && (head.charCodeAt(from) === 32 || head.charCodeAt(from) === 9)) from++;
    while (to > from && (head.charCodeAt(to - 1) === 32 || head.charCodeAt(to - 1) === 9)) to--;
    if (headers[key] !== undefined || REFUSED.has(key)) return null;
    const value = head.slice(from, to);
    if (key === 'host') host = true;
    else if (key === 'connection' && value.toLowerCase() !== 'keep-alive') return null;
    headers[key] = value;
    pos = end + 2;
  }
  if (!host) return null;
  return { method: 'GET', url, headers: headers as IncomingHttpHeaders, socket, complete: true, httpVersion: '1.1' };
}
