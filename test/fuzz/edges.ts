/**
 * Edge values the fuzzer draws from: words, unicode that is valid and unicode that is not,
 * invalid UTF-8, awkward numbers and dates.
 */
/** Words for generated text. */
export const WORDS = ['printer', 'on', 'fire', 'login', 'refund', 'invoice', 'api', 'token', 'error', 'help', 'billing', 'webhook',
  'timeout', 'slow', 'export', 'csv', 'password', 'reset', 'order', 'shipping', 'account', 'locked', 'widget', 'search'];
/** Valid non-ASCII text: scripts, emoji (with joiners), combining marks, fullwidth forms, NBSP. */
export const UNICODE = ['é', 'ß', '日本語', 'עברית', 'العربية', '😀', '👩‍💻', 'e\u0301', 'Ω', 'ﬁ', 'Ⅻ', '١٢٣', 'ＦＵＬＬ', '🇫🇷', '\u00a0'];
/** Lone surrogates (JSON.stringify writes them as `\ud800` escapes), controls, bidi, BOM, noncharacters, combining stacks. */
export const UNICODE_EDGES = [
  '\ud800', '\udc00', '\udbff\udbff', '\udc00\ud800', 'a\ud800b', '\u0000', 'a\u0000b', '\u0001\u0002\u001f\u007f',
  '\u200e', '\u200f', '\u202e', '\u202egnp.exe', '\u2066\u2069', '\ufeff', '\ufeffsubject', '\uffff', '\ufffe', '\ufffd',
  'a' + '\u0301'.repeat(200), 'Z̷̧̛̖̰͓̈́͌a̶̜̐l̷g̸o̵', '👨‍👩‍👧‍👦', '🏳️‍🌈', '\u{10FFFF}', '\u{E0001}\u{E0041}', '\u2028\u2029', '\r\n', '\t',
  '\u0085', '\u3000', 'İ', 'ǅ', '\u1160', '\u{1F600}'.repeat(50), ' ', '', '"\\/', '</script><script>alert(1)</script>',
  "' OR 1=1 --", '${7*7}', '{{7*7}}', '%s%n', '../../../../etc/passwd', 'null', 'undefined', 'NaN', '-0', '1e309', '__proto__',
];
/** Invalid UTF-8: overlong encodings, surrogates, out-of-range, stray continuation, truncated, 0xFE/0xFF. */
export const BAD_UTF8: Buffer[] = [
  [0xc0, 0xaf], [0xc0, 0x80], [0xe0, 0x80, 0xaf], [0xf0, 0x80, 0x80, 0xaf], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xfc, 0x84, 0x80, 0x80, 0x80, 0x80],
  [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf], [0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x80], [0xbf], [0xe2, 0x82], [0xf0, 0x9f, 0x98],
  [0xfe], [0xff], [0xff, 0xfe], [0xc3], [0xe2, 0x28, 0xa1], [0xc1, 0xbf],
].map((b) => Buffer.from(b));
/** Out-of-range and awkward JSON numbers (some are not JSON at all). */
export const NUMBER_EDGES: Array<[string, boolean]> = [ // [text, is valid JSON]
  ['1e309', true], ['-1e309', true], ['-0', true], ['1.5', true], ['9007199254740993', true], ['-9007199254740993', true],
  ['9007199254740992', true], ['1e-400', true], ['0.0000001', true], ['1E2', true], ['100000000000000000000000000000000000000', true],
  ['-1', true], ['0', true], ['2147483648', true], ['4294967296', true], ['1.0', true], ['5e-324', true], ['1.7976931348623157e308', true],
  ['0x10', false], ['NaN', false], ['Infinity', false], ['-Infinity', false], ['01', false], ['-', false], ['1.', false], ['.5', false], ['+1', false], ['1e', false],
];
/** Texts for an integer query parameter: out of range, not integers, odd spellings. */
export const QUERY_NUMBERS = ['abc', '0', '101', '-1', '1.5', '1e3', '1e309', '-0', '9007199254740993', '999999999999999999999', '', ' 1', '1 ', '%201', '0x10', '١', '１', '+5', '5%00', 'null', 'true', '[]', '1,2'];
/** Date-times that are impossible, extreme or malformed, and a few valid ones. */
export const DATE_EDGES = ['2026-02-30T00:00:00Z', '2026-06-29T24:00:00Z', '2026-06-29T23:59:60Z', '9999-12-31T23:59:59.999999999Z', '0000-01-01T00:00:00Z',
  '+275760-09-13T00:00:00Z', '2026-06-29T12:00:00+25:00', '2026-06-29', 'yesterday', '2026-06-29T12:00:00', '1970-01-01T00:00:00Z', '2026-06-29T12:00:00.1234567890Z',
  '2026-13-01T00:00:00Z', '-001-01-01T00:00:00Z', '2026-06-29t12:00:00z', '2026-06-29T12:00:00−01:00'];
/** Days (`YYYY-MM-DD`) that are impossible, extreme or malformed, and a few valid ones. */
export const DAY_EDGES = ['2026-13-01', '0000-00-00', 'abcdefghij', '2026-6-1', '2026-02-30', '1970-01-01', '9999-12-31', '2026-06-29', '2025-06-29', '2026-06-30', '', '2026-06-29T00'];
