/** The YAML 1.2.2 core schema (§10.3.2) for plain scalars, and the JSON-compatible shaping of mapping keys. */
/** Most nodes a stream may expand to once aliases are counted as copies (billion-laughs guard). */
export const MAX_NODES = 1_000_000;
/** Deepest collection nesting accepted (guards the recursion). */
export const MAX_DEPTH = 1000;

const INT = /^[-+]?[0-9]+$/;
const OCT = /^0o[0-7]+$/;
const HEX = /^0x[0-9a-fA-F]+$/;
const FLOAT = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;
const INF = /^[-+]?\.(?:inf|Inf|INF)$/;
const NAN = /^\.(?:nan|NaN|NAN)$/;

/**
 * Resolves a plain scalar by the core schema (§10.3.2): `null`/`Null`/`NULL`/`~`/empty → null; `true`…`FALSE` →
 * boolean; decimal, `0o` and `0x` integers and floats (`1e3`, `.5`, `.inf`, `.nan`) → number (past 2^53 imprecise);
 * anything else → the text.
 */
export function resolvePlain(text: string): unknown {
  const n = text.length;
  if (n === 0) return null;
  const c = text.charCodeAt(0);
  switch (c) {
    case 126: // ~
      return n === 1 ? null : text;
    case 110: case 78: // n N
      return text === 'null' || text === 'Null' || text === 'NULL' ? null : text;
    case 116: case 84: // t T
      return text === 'true' || text === 'True' || text === 'TRUE' ? true : text;
    case 102: case 70: // f F
      return text === 'false' || text === 'False' || text === 'FALSE' ? false : text;
    default:
      if (!(c >= 48 && c <= 57) && c !== 43 && c !== 45 && c !== 46) return text;
  }
  if (INT.test(text) || FLOAT.test(text)) return Number(text);
  if (OCT.test(text)) return parseInt(text.slice(2), 8);
  if (HEX.test(text)) return parseInt(text.slice(2), 16);
  if (INF.test(text)) return c === 45 ? -Infinity : Infinity;
  if (NAN.test(text)) return NaN;
  return text;
}

/** A mapping key as a string, so the result stays JSON-shaped: null → `"null"`, collections JSON, others `String`. */
export function keyString(key: unknown): string {
  if (typeof key === 'string') return key;
  if (key === null || key === undefined) return 'null';
  if (typeof key === 'object') return JSON.stringify(key);
  return String(key);
}

/** `obj[key] = value` as an own property (a later duplicate wins); `__proto__` is defined, never assigned. */
export function setKey(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}
