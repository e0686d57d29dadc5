import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { parseMarkdown } from '../src/ingest/parsers/markdown.js';
import { parseHtml, extractLinks, decodeEntities } from '../src/ingest/parsers/html.js';
import { parseJsonDocuments, parseJsonText } from '../src/ingest/parsers/json.js';
import { IngestError } from '../src/ingest/types.js';
import { CORPUS, readCorpus } from './helpers/corpus.js';

type Expected = {
  endpoints: number | null;
  notes: string;
  markdown_atx_headings?: number;
  title?: string;
  full_document?: boolean;
  headings_h1_h6?: number;
  valid_json?: boolean;
};
const expected = JSON.parse(readFileSync(new URL('expected.json', CORPUS), 'utf8')) as Record<string, Expected>;
const read = readCorpus;
const list = (dir: string): string[] => readdirSync(new URL(`${dir}/`, CORPUS)).sort();

// ------------------------------------------------------------------------------------------------
// Markdown

/**
 * Per corpus file, facts checked by hand that expected.json's naive `^#{1,6} ` line count does not
 * know: setext headings (which it does not count) and `# comment` lines inside fenced code blocks
 * (which it wrongly counts: oas-3.1.0-specification.md lines 1460, 1466, 1497 are YAML comments).
 */
const MARKDOWN_FACTS: Record<string, { setext: number; fencedHashLines: number }> = {
  'cxf-wsdl_first-README.txt': { setext: 8, fencedHashLines: 0 },
  'grpc-go-grpc-metadata.md': { setext: 0, fencedHashLines: 0 },
  'newman-README.md': { setext: 0, fencedHashLines: 0 },
  'oas-3.1.0-specification.md': { setext: 0, fencedHashLines: 3 },
  'python-zeep-README.md': { setext: 0, fencedHashLines: 0 },
  'swapi-graphql-README.md': { setext: 1, fencedHashLines: 0 },
  'yaml-test-suite-ReadMe.md': { setext: 1, fencedHashLines: 0 },
};

test('markdown: every corpus text file gives one section per heading', () => {
  for (const f of list('text')) {
    const exp = expected[`text/${f}`];
    const facts = MARKDOWN_FACTS[f];
    assert.ok(exp && facts, f);
    const text = read(`text/${f}`);
    const r = parseMarkdown(text);
    assert.equal(r.endpoints.length, 0);
    assert.ok(r.documents.every((d) => d.kind === 'section'));
    // A heading section starts with an ATX line or a (one-line) setext paragraph + underline;
    // only a leading preamble section does not.
    const isHeading = (t: string): boolean => {
      const [first, second = ''] = t.split('\n');
      return /^ {0,3}#{1,6}([ \t]|$)/.test(first) || /^ {0,3}(=+|-+)[ \t]*$/.test(second);
    };
    const headingSections = r.documents.filter((d) => isHeading(d.text)).length;
    assert.ok(r.documents.slice(1).every((d) => isHeading(d.text)), f);
    assert.equal(headingSections, (exp.markdown_atx_headings ?? 0) - facts.fencedHashLines + facts.setext, f);
    // Sections together hold every non-blank line of the file.
    const all = r.documents.map((d) => d.text).join('\n');
    assert.equal(all.replace(/\s+/g, ''), text.replace(/^\uFEFF/, '').replace(/\s+/g, ''), `${f} coverage`);
  }
});

test('markdown: titles', () => {
  assert.equal(parseMarkdown(read('text/oas-3.1.0-specification.md')).title, 'OpenAPI Specification');
  assert.equal(parseMarkdown(read('text/cxf-wsdl_first-README.txt')).title, 'WSDL First Demo');
  const newman = parseMarkdown(read('text/newman-README.md'));
  assert.equal(newman.documents[0].title, 'Introduction');
  assert.equal(newman.title, 'newman the cli companion for postman');
  const grpc = parseMarkdown(read('text/grpc-go-grpc-metadata.md'));
  assert.equal(grpc.documents[0].title, 'Metadata');
});

test('markdown: headings inside fenced code blocks are not headings', () => {
  const md = ['# Title', '', '```sh', '# not a heading', '```', '', '~~~~', '## also not', '```', '### still code', '~~~~', '', '## Real', 'text', '````', '# unclosed fence runs to the end'].join('\n');
  const r = parseMarkdown(md);
  assert.deepEqual(r.documents.map((d) => d.title), ['Title', 'Real']);
  assert.match(r.documents[0].text, /# not a heading/);
  assert.match(r.documents[1].text, /# unclosed fence/);
  // A backtick fence's info string may not contain backticks: ```foo`bar is inline code, not a fence.
  assert.deepEqual(parseMarkdown('```a`b\n# H').documents.map((d) => [d.title, d.text]), [['ab', '```a`b'], ['H', '# H']]);
});

test('markdown: setext headings, ATX details, preamble and plain text', () => {
  const r = parseMarkdown('Intro line\nmore\n\nMain Title\n==========\nbody\n\nSub *part*\n---\nx\n\n- item\n---\n#hashtag\n####### seven\n## Closed ##\n#\n');
  assert.deepEqual(r.documents.map((d) => d.title), ['Intro line', 'Main Title', 'Sub part', 'Closed', '(untitled section)']);
  assert.equal(r.title, 'Main Title');
  assert.match(r.documents[2].text, /#hashtag\n####### seven/);
  const plain = parseMarkdown('Just some text.\nSecond line.');
  assert.equal(plain.documents.length, 1);
  assert.equal(plain.documents[0].title, 'Just some text.');
  assert.equal(plain.title, undefined);
  assert.equal(parseMarkdown('[![b](x)](y)\ntext').documents[0].title, 'text');
  assert.equal(parseMarkdown('[![b](x)](y)\n\n# H').documents[0].title, 'Introduction');
  assert.deepEqual(parseMarkdown('   \n\n').documents, []);
  const crlf = parseMarkdown('\uFEFF# A\r\nx\r\n## B\r\ny');
  assert.deepEqual(crlf.documents.map((d) => [d.title, d.text]), [['A', '# A\nx'], ['B', '## B\ny']]);
  const fm = parseMarkdown('---\ntitle: x\n---\n# Doc\n');
  assert.deepEqual(fm.documents.map((d) => d.title), ['title: x', 'Doc']);
});

// ------------------------------------------------------------------------------------------------
// HTML

/** `# comment` lines inside <pre> examples, which read like headings in the extracted text. */
const PRE_HASH_LINES: Record<string, number> = { 'spec.openapis.org-oas-v3.1.0.html': 3 };

test('html: every corpus page gives documents, the right title, no script or style text', () => {
  for (const f of list('html')) {
    const exp = expected[`html/${f}`];
    assert.ok(exp, f);
    const html = read(`html/${f}`);
    const t0 = Date.now();
    const r = parseHtml(html);
    assert.ok(Date.now() - t0 < 2000, `${f} parsed fast`);
    if (exp.full_document) assert.equal(r.title, exp.title, f);
    assert.ok(r.documents.length >= 1, f);
    const text = r.documents.map((d) => d.text).join('\n');
    assert.ok(r.documents.every((d) => d.kind === 'page' && d.title.length > 0), f);
    for (const bad of ['<script', '</div>', 'import {', 'margin: 0;', 'createRoot', '<!--']) assert.ok(!text.includes(bad), `${f}: ${bad}`);
    const headingLines = text.split('\n').filter((l) => /^#{1,6} /.test(l)).length;
    assert.equal(headingLines - (PRE_HASH_LINES[f] ?? 0), exp.headings_h1_h6, `${f} headings`);
  }
});

test('html: corpus details', () => {
  const frag = parseHtml(read('html/github-docs-webhook-events-fragment.html'));
  assert.equal(frag.title, 'Webhook events and payloads', 'fragment: title from first h1');
  assert.ok(frag.documents.length > 10, 'long page split into sections');
  assert.ok(frag.documents.some((d) => d.title === 'check_run'));
  const swapi = parseHtml(read('html/swapi-graphiql-index.html'));
  assert.equal(swapi.documents.length, 1);
  assert.equal(swapi.documents[0].text, 'Loading…');
  const oas = parseHtml(read('html/spec.openapis.org-oas-v3.1.0.html'));
  assert.ok(oas.documents.some((d) => d.title === '4.8 Schema'));
  const links = extractLinks(read('html/spec.openapis.org-oas-v3.1.0.html'), 'https://spec.openapis.org/oas/v3.1.0.html');
  assert.ok(links.includes('https://spec.openapis.org/oas/v3.1.0.html'));
  assert.ok(links.includes('https://openapis.org/'));
  assert.ok(links.every((l) => /^https?:\/\//.test(l) && !l.includes('#')));
  assert.equal(new Set(links).size, links.length);
});

test('html: text extraction', () => {
  const html = `<!DOCTYPE html><html><head><title> My &amp; Page </title><style>p{color:red}</style>
  <script>if (a < b) { document.write("</p>") }</script></head><body>
  <noscript>enable js</noscript><template><p>tpl</p></template><!-- hidden <b>comment</b> -->
  <h1>Big <em>Title</em></h1><p>Hello&nbsp;world &mdash; it&#39;s &#x263A; &lt;ok&gt; &copy &unknown; &amp</p>
  <ul><li>one</li><li>two<br>lines</li></ul><table><tr><th>A</th><th>B</th></tr><tr><td>1</td><td>2</td></tr></table>
  <pre>
  keep   spaces
    here</pre><p>a<span>b</span> c</p></body></html>`;
  const r = parseHtml(html);
  assert.equal(r.title, 'My & Page');
  assert.equal(r.documents.length, 1);
  const t = r.documents[0].text;
  assert.equal(
    t,
    [
      '# Big Title',
      '',
      "Hello world — it's ☺ <ok> © &unknown; &",
      '',
      '- one',
      '- two',
      'lines',
      '',
      'A | B',
      '1 | 2',
      '',
      '  keep   spaces',
      '    here',
      '',
      'ab c',
    ].join('\n'),
  );
  assert.equal(parseHtml('<h1>Only heading</h1><p>x</p>').title, 'Only heading');
  assert.equal(parseHtml('<ul><li>\n  one <b> two </b>\n</li></ul>a<br><br><br><br>b &copy=2 &amp;x').documents[0].text, '- one two\n\na\n\nb &copy=2 &x');
  assert.deepEqual(extractLinks('<a href="/p?a=1&copy=2&amp;b=3">x</a>', 'https://e.com/'), ['https://e.com/p?a=1&copy=2&b=3']);
  assert.deepEqual(parseHtml('').documents, []);
  assert.equal(decodeEntities('&#0;&#x110000;&#xD800;&constructor;&AElig;&eacute;'), '\uFFFD\uFFFD\uFFFD&constructor;Æé');
});

test('html: long pages are split at h1-h3 into page sections', () => {
  const para = '<p>' + 'lorem ipsum dolor sit amet '.repeat(40) + '</p>';
  const html = `<title>T</title><p>intro</p><h1>One</h1>${para}<h4>minor</h4>${para}<h2>Two</h2>${para}<h3>Three</h3>${para}`;
  const r = parseHtml(html);
  assert.deepEqual(r.documents.map((d) => d.title), ['T', 'One', 'Two', 'Three']);
  assert.ok(r.documents.every((d) => d.kind === 'page'));
  assert.match(r.documents[1].text, /^# One\n/);
  assert.match(r.documents[1].text, /#### minor/);
  const short = parseHtml('<title>S</title><h1>A</h1><p>x</p><h2>B</h2><p>y</p>');
  assert.equal(short.documents.length, 1);
});

test('html: malformed input never throws', () => {
  const garbage = [
    '<', '<<<>>>', '<a href="unterminated', '<!-- never closed', '<script>never closed', '</', '</ >', '<?php x', '<!>', '<!-->x', '<!--->y',
    '<div <p>>text</p>', '<h2>unclosed heading<p>para', '&#99999999999;&#xFFFFFFFF;', '<svg><title>svg title</title></svg><p>body</p>',
    '<a href=x onclick=\'y>z\'>l</a>', '\u0000\uFFFF\uD800',
  ];
  for (const g of garbage) {
    assert.doesNotThrow(() => parseHtml(g), g);
    assert.doesNotThrow(() => extractLinks(g, 'https://e.com/'), g);
  }
  assert.equal(parseHtml('<!-->x').documents[0].text, 'x');
  assert.equal(parseHtml('<svg><title>svg title</title></svg><p>body</p>').title, undefined);
});

test('html: pathological 2 MB inputs finish fast', () => {
  const size = 2 * 1024 * 1024;
  const inputs = [
    '<'.repeat(size),
    '<a '.repeat(size / 3),
    '<a href="'.repeat(size / 9),
    '<a b=\'c\' '.repeat(size / 9) + '>',
    '<!--'.repeat(size / 4),
    '</a'.repeat(size / 3),
    '<script>'.repeat(size / 8),
    '&'.repeat(size),
    '&#'.repeat(size / 2) + '&amp'.repeat(size / 8),
    '&nbsp;'.repeat(size / 6),
    '<p>'.repeat(size / 3),
    '<h1>'.repeat(size / 4),
    '<li>x'.repeat(size / 5),
    ' \n\t'.repeat(size / 3),
    '<td>'.repeat(size / 4),
    '<div class="' + 'x '.repeat(size / 2),
  ];
  for (const input of inputs) {
    // CPU time, not wall time: a loaded machine must not fail a linear parser (a quadratic one
    // takes minutes here).
    const c0 = process.cpuUsage();
    parseHtml(input);
    extractLinks(input, 'https://e.com/');
    const c = process.cpuUsage(c0);
    const ms = Math.round((c.user + c.system) / 1000);
    assert.ok(ms < 3000, `${JSON.stringify(input.slice(0, 12))}… took ${ms} ms of CPU`);
  }
});

test('html: extractLinks resolves, filters and de-duplicates', () => {
  const html = `<base href="/docs/"><a href="a.html#x">1</a><a href='a.html'>2</a><a href=b.html>3</a>
    <a href="https://other.org/p?q=1#f">4</a><a href="mailto:x@y">5</a><a href="javascript:void(0)">6</a>
    <a href="ftp://x/">7</a><a>no href</a><a href="http://[bad">8</a><!-- <a href="/commented"> -->
    <script>'<a href="/scripted">'</script><a HREF="  /abs?x=1&amp;y=2  ">9</a><A href="#top">10</A>`;
  assert.deepEqual(extractLinks(html, 'https://site.com/start/page.html'), [
    'https://site.com/docs/a.html',
    'https://site.com/docs/b.html',
    'https://other.org/p?q=1',
    'https://site.com/abs?x=1&y=2',
    'https://site.com/docs/',
  ]);
  assert.deepEqual(extractLinks('<a href="/x">r</a><a href="https://a.com/y">a</a>', 'not a url'), ['https://a.com/y']);
});

// ------------------------------------------------------------------------------------------------
// JSON

test('json: every valid corpus file gives documents; the invalid one is rejected', () => {
  for (const f of list('json')) {
    const exp = expected[`json/${f}`];
    assert.ok(exp, f);
    const text = read(`json/${f}`);
    if (exp.valid_json === false) {
      assert.throws(() => JSON.parse(text), SyntaxError, f);
      assert.throws(() => parseJsonText(text), (e: unknown) => e instanceof IngestError && e.line === 1 && e.column === 9, f);
      continue;
    }
    const r = parseJsonDocuments(JSON.parse(text));
    assert.equal(r.endpoints.length, 0);
    assert.ok(r.documents.length >= 1, f);
    assert.ok(r.documents.every((d) => d.kind === 'entry' && d.text.length > 0 && d.text.length <= 16_100), f);
    const keys = /(\d+) top-level keys/.exec(exp.notes);
    const items = /(\d+) items/.exec(exp.notes);
    if (keys) assert.equal(r.documents.length, Number(keys[1]), f);
    else if (items) assert.equal(r.documents.length, Number(items[1]), f);
    else assert.equal(r.documents.length, 1, f);
  }
});

test('json: flattening and titles', () => {
  const push = parseJsonDocuments(JSON.parse(read('json/github-webhook-push.json')));
  const repo = push.documents.find((d) => d.title === 'repository');
  assert.ok(repo);
  assert.match(repo.text, /^repository\.owner\.login: \S+$/m);
  const schema = parseJsonDocuments(JSON.parse(read('json/oas-2.0-json-schema.json')));
  assert.equal(schema.title, 'A JSON Schema for Swagger 2.0 API.');

  const r = parseJsonDocuments({ a: { b: [1, { c: 'x\ny' }], 'odd key': null, e: {}, f: [] }, n: 5 });
  assert.deepEqual(r.documents.map((d) => d.title), ['a', 'n']);
  assert.equal(r.documents[0].text, ['a.b[0]: 1', 'a.b[1].c: x', '  y', 'a["odd key"]: null', 'a.e: {}', 'a.f: []'].join('\n'));
  assert.equal(r.documents[1].text, 'n: 5');

  const arr = parseJsonDocuments([{ name: 'first' }, { id: 7 }, { title: '' }, 3]);
  assert.deepEqual(arr.documents.map((d) => d.title), ['first', '7', '[2]', '[3]']);
  assert.equal(arr.documents[3].text, '[3]: 3');
  assert.deepEqual(parseJsonDocuments('lonely').documents, [{ kind: 'entry', title: 'lonely', text: 'lonely' }]);
  assert.equal(parseJsonDocuments(null).documents[0].text, 'null');
  assert.equal(parseJsonDocuments({}).documents[0].text, '{}');
  assert.equal(parseJsonDocuments([]).documents[0].text, '[]');
  assert.throws(() => parseJsonDocuments(undefined), IngestError);
});

test('json: size and depth are bounded', () => {
  const big = { k: Array.from({ length: 100_000 }, (_, i) => ({ i, s: 'word '.repeat(5) })) };
  const t0 = Date.now();
  const r = parseJsonDocuments(big);
  assert.ok(Date.now() - t0 < 1000);
  assert.ok(r.documents[0].text.length <= 16_100);
  assert.match(r.documents[0].text, /… \(truncated\)$/);
  let deep: unknown = 'bottom';
  for (let i = 0; i < 10_000; i++) deep = { d: deep };
  const d = parseJsonDocuments({ deep }).documents[0].text;
  assert.match(d, /: \{…\}$/);
});
