/**
 * HTML made safe by construction (docs/web.md#rendering): every page is built with the
 * {@link html} tagged template, which escapes every interpolated value unless that value is
 * itself {@link Html} — and an {@link Html} can only come out of the tag (its constructor is
 * private to this module, and nothing here turns a plain string into one). So text from a
 * user, a key name or a source can only ever reach a page escaped.
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const SPECIAL = /[&<>"']/g;

/** `text` with `& < > " '` replaced by entities: safe as element content and inside a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(SPECIAL, (c) => ESCAPES[c]);
}

/** Set by {@link Html}'s static block: the only way to make one, private to this module. */
let mint: (text: string) => Html;

/** Markup that is known to be safe: only {@link html} makes one (the constructor is private). */
export class Html {
  /** Makes the type nominal: a look-alike object is not an Html (and is escaped at run time anyway). */
  private readonly brand = true;
  private constructor(readonly text: string) {}
  static { mint = (text) => new Html(text); }
  toString(): string { return this.text; }
}

/** What may be interpolated: escaped text, numbers, markup, lists of them; null, undefined and false render nothing. */
export type Part = Html | string | number | null | undefined | false | readonly Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return part.map(render).join('');
  return escapeHtml(String(part));
}

/**
 * The template tag: the literal parts are taken as written (they are the program's own
 * markup), every `${value}` is escaped unless it is {@link Html}.
 */
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return mint(out);
}

/** A path segment for a URL in a page (an id): percent-encoded; the tag escapes it again when interpolated. */
export const seg = (value: string): string => encodeURIComponent(value);
