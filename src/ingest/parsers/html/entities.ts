/** HTML character references: the named-entity table and {@link decodeEntities}. */

/** HTML 4 Latin-1 entity names, code points 160–255 in order. */
const LATIN1 =
  'nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 acute ' +
    'micro para middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde Auml Aring ' +
    'AElig Ccedil Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde Ouml ' +
    'times Oslash Ugrave Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc atilde auml aring aelig ' +
    'ccedil egrave eacute ecirc euml igrave iacute icirc iuml eth ntilde ograve oacute ocirc otilde ouml ' +
    'divide oslash ugrave uacute ucirc uuml yacute thorn yuml';

const NAMED: Record<string, number> = {
  amp: 38, lt: 60, gt: 62, quot: 34, apos: 39, Tab: 9, NewLine: 10, excl: 33, num: 35, dollar: 36,
  percnt: 37, lpar: 40, rpar: 41, ast: 42, plus: 43, comma: 44, period: 46, sol: 47, colon: 58,
  semi: 59, equals: 61, quest: 63, commat: 64, lsqb: 91, bsol: 92, rsqb: 93, lowbar: 95, grave: 96,
  lcub: 123, verbar: 124, vert: 124, rcub: 125, ndash: 0x2013, mdash: 0x2014, lsquo: 0x2018,
  rsquo: 0x2019, sbquo: 0x201a, ldquo: 0x201c, rdquo: 0x201d, bdquo: 0x201e, dagger: 0x2020,
  Dagger: 0x2021, bull: 0x2022, hellip: 0x2026, permil: 0x2030, prime: 0x2032, Prime: 0x2033,
  lsaquo: 0x2039, rsaquo: 0x203a, oline: 0x203e, euro: 0x20ac, trade: 0x2122, larr: 0x2190,
  uarr: 0x2191, rarr: 0x2192, darr: 0x2193, harr: 0x2194, lArr: 0x21d0, rArr: 0x21d2, hArr: 0x21d4,
  forall: 0x2200, part: 0x2202, exist: 0x2203, empty: 0x2205, nabla: 0x2207, isin: 0x2208,
  notin: 0x2209, prod: 0x220f, sum: 0x2211, minus: 0x2212, radic: 0x221a, infin: 0x221e,
  and: 0x2227, or: 0x2228, cap: 0x2229, cup: 0x222a, asymp: 0x2248, ne: 0x2260, equiv: 0x2261,
  le: 0x2264, ge: 0x2265, ensp: 0x2002, emsp: 0x2003, thinsp: 0x2009, zwnj: 0x200c, zwj: 0x200d,
  lrm: 0x200e, rlm: 0x200f, check: 0x2713, cross: 0x2717, alpha: 0x3b1, beta: 0x3b2, gamma: 0x3b3,
  delta: 0x3b4, epsilon: 0x3b5, lambda: 0x3bb, mu: 0x3bc, pi: 0x3c0, sigma: 0x3c3, omega: 0x3c9,
  Delta: 0x394, Sigma: 0x3a3, Omega: 0x3a9, OElig: 0x152, oelig: 0x153, Scaron: 0x160,
  scaron: 0x161, Yuml: 0x178, fnof: 0x192, circ: 0x2c6, tilde: 0x2dc,
};
LATIN1.split(' ').forEach((name, i) => (NAMED[name] = 160 + i));
/** Entities browsers also recognise without the trailing `;`. */
const LEGACY = new Set(['amp', 'lt', 'gt', 'quot', 'nbsp', 'copy', 'reg']);

const ENTITY = /&(#[0-9]{1,8}|#[xX][0-9a-fA-F]{1,7}|[A-Za-z][A-Za-z0-9]{1,31})(;?)/g;

/**
 * Decodes HTML character references: named ones from a table of common entities (`;` required except for a few legacy
 * names), decimal and hex; invalid code points become U+FFFD, unknown names stay as written. Never throws.
 */
export function decodeEntities(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(ENTITY, (whole: string, body: string, semi: string, at: number) => {
    if (body[0] === '#') {
      const cp = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
      if (cp === 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return '\uFFFD';
      return String.fromCodePoint(cp);
    }
    const cp = NAMED[body];
    if (cp === undefined || !Object.prototype.hasOwnProperty.call(NAMED, body)) return whole;
    if (!semi && (!LEGACY.has(body) || s[at + whole.length] === '=')) return whole; // `?a=1&copy=2` stays
    return String.fromCodePoint(cp);
  });
}
