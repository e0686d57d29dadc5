/**
 * Small readers of parsed JSON/YAML values and of text, shared by the source parsers: a value read from an untrusted
 * document may be anything, so each helper says what it accepts and what it gives back for anything else.
 */
/** A JSON/YAML object (a mapping): not null, not an array. */
export type Obj = Record<string, unknown>;

/** True for a plain object (not null, not an array). */
export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `v` when it is a string with some non-white-space content, else undefined (a blank string is absent). */
export function nonBlankString(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v : undefined;
}

/** `v` when it is a string (blank included), else undefined. */
export function optionalString(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** `v` when it is a string, else `''` (for fields where absent and empty read the same). */
export function stringOrEmpty(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** White space runs (line breaks included) collapsed to one space, ends trimmed; `''` for anything but a string. */
export function oneLine(v: unknown): string {
  return typeof v === 'string' ? v.replace(/\s+/g, ' ').trim() : '';
}

/** `s` kept to its first `max` characters, followed by `…` when it was longer (so at most `max + 1` characters). */
export function cutLine(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

/** `s` cut to `max` characters with a note saying how long it was: `… (truncated, 25000 chars)`. */
export function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max)}… (truncated, ${s.length} chars)` : s;
}
