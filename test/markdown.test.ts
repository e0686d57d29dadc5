/**
 * The Markdown renderer of docs descriptions (docs/web.md#markdown): CommonMark blocks and inlines,
 * GFM tables, only its own tags (raw HTML shown as text), links only http(s)/mailto, and linear
 * cost on pathological input (10x the input costs about 10x, never 100x).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { markdown } from '../src/web/markdown.js';

const md = (s: string) => markdown(s).text;

test('markdown: blocks and inlines', () => {
  assert.equal(md('Some **bold**, *em*, `a < b` and [docs](https://x.example/a?b=1&c=2).'),
    '<p>Some <strong>bold</strong>, <em>em</em>, <code>a &lt; b</code> and ' +
    '<a href="https://x.example/a?b=1&amp;c=2" rel="nofollow">docs</a>.</p>');
  assert.equal(md('# Title\n\ntext'), '<h3 class="md-h">Title</h3><p>text</p>');
  assert.equal(md('- a\n- b\n  - c'), '<ul><li>a</li><li>b<ul><li>c</li></ul></li></ul>');
  assert.equal(md('1. one\n2. two'), '<ol><li>one</li><li>two</li></ol>');
  assert.equal(md('> quoted'), '<blockquote><p>quoted</p></blockquote>');
  assert.equal(md('```json\n{"a": 1}\n```'), '<pre class="md-code"><code data-lang="json">{&quot;a&quot;: 1}</code></pre>');
  assert.equal(md('    indented'), '<pre class="md-code"><code>indented</code></pre>');
  assert.equal(md('line one  \nline two'), '<p>line one<br>line two</p>');
  assert.equal(md('| a | b |\n|---|--:|\n| 1 | 2 |'), '<div class="table-wrap"><table class="md-table"><thead><tr>' +
    '<th class="">a</th><th class="md-right">b</th></tr></thead><tbody><tr><td class="" data-label="a">1</td>' +
    '<td class="md-right" data-label="b">2</td></tr></tbody></table></div>');
  assert.equal(md('snake_case_name and ***both***'), '<p>snake_case_name and <em><strong>both</strong></em></p>');
});

test('markdown: raw HTML is text, only http(s) and mailto links', () => {
  assert.equal(md('<script>alert(1)</script> <img src=x onerror=alert(1)>'),
    '<p>&lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt;</p>');
  assert.equal(md('[click](javascript:alert(1)) [d](data:text/html,x) [m](mailto:a@b.example)'),
    '<p>click d <a href="mailto:a@b.example" rel="nofollow">m</a></p>');
  assert.equal(md('[x](https://a.example/" onmouseover="y)'), '<p>[x](https://a.example/&quot; onmouseover=&quot;y)</p>');
  assert.equal(md('<https://a.example> <javascript:alert(1)>'),
    '<p><a href="https://a.example" rel="nofollow">https://a.example</a> &lt;javascript:alert(1)&gt;</p>');
});

/** CPU time (ms) of rendering `s`, the best of 2. */
function cost(s: string): number {
  let best = Infinity;
  for (let k = 0; k < 2; k++) {
    const t = process.cpuUsage();
    markdown(s);
    const u = process.cpuUsage(t);
    best = Math.min(best, (u.user + u.system) / 1000);
  }
  return best;
}

test('markdown: pathological input renders in linear time (10x input, at most 30x cost)', () => {
  const shapes: Array<[string, (n: number) => string]> = [
    ['*', (n) => '*'.repeat(n)], ['[', (n) => '['.repeat(n)], ['`', (n) => '`'.repeat(n)],
    ['mixed backticks', (n) => Array.from({ length: n / 4 }, (_, i) => '`'.repeat(1 + (i % 7)) + 'a').join('')],
    ['*a_', (n) => '*a_'.repeat(n / 3)], ['[a](', (n) => '[a]('.repeat(n / 4)], ['> ', (n) => '> '.repeat(n / 2)],
    ['- ', (n) => '- '.repeat(n / 2)], ['lines of |', (n) => '|a|\n'.repeat(n / 4)], ['\\n- x', (n) => '\n- x'.repeat(n / 4)],
    ['<', (n) => '<'.repeat(n)], ['** a', (n) => '** a'.repeat(n / 4)],
  ];
  for (const [name, make] of shapes) {
    const small = cost(make(200_000));
    const big = cost(make(2_000_000));
    assert.ok(big < 30 * Math.max(small, 5), `${name}: 200 KB in ${small.toFixed(1)} ms, 2 MB in ${big.toFixed(1)} ms`);
  }
});
