/**
 * Directives (YAML 1.2.2 §6.8, https://yaml.org/spec/1.2.2/#68-directives) and the resolution of tag properties against
 * the `%TAG` handles of the current document (§6.9.1).
 */
import { HASH, LF, isBlank, isFlowIndicator, isWsOrEnd, type Scanner } from './scanner.js';

/** The core schema's string tag; `!!str` resolves to it unless `%TAG !!` says otherwise. */
export const STR_TAG = 'tag:yaml.org,2002:str';

/** What the directives before one document declared: whether `%YAML` was read, and `%TAG` handle → prefix. */
export interface Directives { yaml: boolean; handles: Map<string, string> }

/** A `%YAML` version: major.minor. */
const VERSION = /^([0-9]+)\.[0-9]+$/;
/** A named tag handle `!name!` (word characters and `-`, §6.8.2.2). */
const NAMED_HANDLE = /^![0-9A-Za-z-]+!$/;
/** A verbatim tag that is neither local (`!…`) nor starts with a URI scheme. */
const URI_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/** Each white-space-separated word of a directive line, with its position, up to a comment. */
function words(sc: Scanner): Array<{ text: string; at: number }> {
  const out: Array<{ text: string; at: number }> = [];
  let p = sc.pos + 1;
  for (;;) {
    const at = p;
    while (!isWsOrEnd(sc.code(p))) p++;
    out.push({ text: sc.src.slice(at, p), at });
    while (isBlank(sc.code(p))) p++;
    const c = sc.code(p);
    if (c === HASH) {
      const e = sc.src.indexOf('\n', p);
      p = e < 0 ? sc.len : e;
      break;
    }
    if (c === LF || c !== c) break;
  }
  sc.pos = sc.code(p) === LF ? p + 1 : p;
  return out;
}

/**
 * Reads the directive line at `pos` (a `%` in column 1) into `into` and moves past it. `%YAML` takes one `1.x` version,
 * once; `%TAG` a handle and a prefix, each handle once; other directives are reserved and ignored (§6.8.1).
 * @throws IngestError naming the offending word, e.g. `YAML: unexpected 'foo' after the %YAML version at line 1, column
 *   11`.
 */
export function readDirective(sc: Scanner, into: Directives): void {
  const start = sc.pos;
  const [name, ...args] = words(sc);
  const end = name.at + name.text.length;
  if (name.text === '') sc.fail('a directive needs a name', name.at);
  if (name.text === 'YAML') {
    if (into.yaml) sc.fail('a document can have only one %YAML directive', start);
    into.yaml = true;
    const v = args[0];
    if (v === undefined) sc.fail("the %YAML directive needs a version such as '1.2'", end);
    const m = VERSION.exec(v.text);
    if (m === null) sc.fail(`invalid YAML version '${v.text}'`, v.at);
    if (m[1] !== '1') sc.fail(`unsupported YAML version '${v.text}'`, v.at);
    if (args.length > 1) sc.fail(`unexpected '${args[1].text}' after the %YAML version`, args[1].at);
  } else if (name.text === 'TAG') {
    if (args.length < 2) sc.fail('the %TAG directive needs a tag handle and a prefix', args[0]?.at ?? end);
    const [handle, prefix] = args;
    if (handle.text !== '!' && handle.text !== '!!' && !NAMED_HANDLE.test(handle.text)) {
      sc.fail(`invalid tag handle '${handle.text}'`, handle.at);
    }
    if (into.handles.has(handle.text)) sc.fail(`the tag handle '${handle.text}' is declared twice`, handle.at);
    if (isFlowIndicator(prefix.text.charCodeAt(0))) sc.fail(`invalid tag prefix '${prefix.text}'`, prefix.at);
    if (args.length > 2) sc.fail(`unexpected '${args[2].text}' after the tag prefix`, args[2].at);
    into.handles.set(handle.text, prefix.text);
  }
}

/**
 * The full tag a tag property stands for (§6.9.1): `!<…>` verbatim, `!` (non-specific) as `!`, or a shorthand whose
 * handle is expanded with the document's `%TAG` prefix (defaults: `!` → `!`, `!!` → `tag:yaml.org,2002:`), the suffix
 * kept as written.
 * @throws IngestError `invalid verbatim tag`, `invalid tag`, or `undefined tag handle '!x!'` (a named handle no `%TAG`
 *   of this document declared), at `at`.
 */
export function resolveTag(sc: Scanner, text: string, at: number, handles: Map<string, string>): string {
  if (text.startsWith('!<')) {
    const uri = text.slice(2, -1);
    if (uri === '!' || !(uri.startsWith('!') || URI_SCHEME.test(uri))) sc.fail(`invalid verbatim tag '${text}'`, at);
    return uri;
  }
  if (text === '!') return '!';
  const k = text.indexOf('!', 1);
  const handle = k < 0 ? '!' : text.slice(0, k + 1);
  const suffix = text.slice(handle.length);
  if (suffix === '' || suffix.includes('!') || (k >= 0 && handle !== '!!' && !NAMED_HANDLE.test(handle))) {
    sc.fail(`invalid tag '${text}'`, at);
  }
  const prefix = handles.get(handle) ?? (handle === '!' ? '!' : handle === '!!' ? 'tag:yaml.org,2002:' : undefined);
  if (prefix === undefined) sc.fail(`undefined tag handle '${handle}'`, at);
  return prefix + suffix;
}
