import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { parseXml, textContent, childElements, firstChild } from '../src/ingest/parsers/xml.js';
import { parseWsdl } from '../src/ingest/parsers/wsdl.js';
import { CORPUS, PENDING_AUTO, expectedJson, throwsIngest } from './helpers/corpus.js';

const EXPECTED = expectedJson<{ endpoints: number | null; services?: number; imports?: number; documents?: number }>();

// ---------------------------------------------------------------- XML

test('xml: elements, attributes in both quote styles, self-closing tags and text', () => {
  const root = parseXml(`<?xml version="1.0" encoding="UTF-8"?>\n<root a="1" b='two'>\n  <leaf/>\n  <item id="x">hello</item>\n</root>`);
  assert.equal(root.name, 'root');
  assert.deepEqual({ ...root.attrs }, { a: '1', b: 'two' });
  assert.deepEqual(root.children.map((c) => c.name), ['leaf', 'item']);
  assert.equal(root.children[0].children.length, 0);
  assert.equal(root.children[1].text, 'hello');
  assert.equal(root.children[1].line, 4);
  assert.equal(root.children[1].column, 3);
});

test('xml: namespaces resolve through scoped default and prefixed declarations', () => {
  const root = parseXml(
    '<w:defs xmlns:w="urn:w" xmlns="urn:default"><plain/><w:x/>' +
      '<inner xmlns="urn:inner" xmlns:w="urn:w2"><w:y/><z/><none xmlns=""/></inner><after/></w:defs>',
  );
  assert.equal(root.ns, 'urn:w');
  assert.equal(root.local, 'defs');
  const [plain, x, inner, after] = root.children;
  assert.equal(plain.ns, 'urn:default');
  assert.equal(x.ns, 'urn:w');
  assert.equal(inner.ns, 'urn:inner');
  assert.deepEqual(inner.children.map((c) => [c.name, c.ns]), [['w:y', 'urn:w2'], ['z', 'urn:inner'], ['none', '']]);
  assert.equal(after.ns, 'urn:default', 'a declaration on a sibling does not leak');
  assert.equal(childElements(root, 'x', 'urn:w').length, 1);
  assert.equal(firstChild(root, 'x', 'urn:other'), undefined);
  assert.equal(parseXml('<xml:a/>').ns, 'http://www.w3.org/XML/1998/namespace');
});

test('xml: CDATA is kept verbatim and merges with surrounding text', () => {
  const root = parseXml('<a>x<![CDATA[<b>&amp;]]>y<!-- c --><?pi data?>z</a>');
  assert.equal(root.text, 'x<b>&amp;yz');
  assert.equal(root.children.length, 0);
});

test('xml: predefined entities and decimal/hex character references', () => {
  const root = parseXml('<a t="&lt;&gt;&amp;&apos;&quot;&#10;&#x1F600;">&lt;tag&gt; &amp; &#65;&#x42;&#x1F600;</a>');
  assert.equal(root.text, '<tag> & AB😀');
  assert.equal(root.attrs.t, `<>&'"\n😀`);
});

test('xml: attribute values normalise literal whitespace; CRLF becomes LF in text', () => {
  const root = parseXml('<a v="x\ny\tz">l1\r\nl2\rl3</a>');
  assert.equal(root.attrs.v, 'x y z');
  assert.equal(root.text, 'l1\nl2\nl3');
});

test('xml: mixed content keeps document order in textContent', () => {
  const root = parseXml('<doc>Hello <b>bold <i>and</i> italic</b> world</doc>');
  assert.equal(textContent(root), 'Hello bold and italic world');
  assert.equal(root.text, 'Hello  world');
});

test('xml: DOCTYPE is skipped, entities it declares are never expanded', () => {
  const xml = '<?xml version="1.0"?>\n<!DOCTYPE a [\n <!ENTITY xxe SYSTEM "file:///etc/passwd">\n <!ENTITY lol "lol>">\n <!-- ] > -->\n]>\n<a>&xxe;&lol;</a>';
  const root = parseXml(xml);
  assert.equal(root.text, '&xxe;&lol;');
  assert.equal(parseXml('<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0//EN" "x.dtd"><html/>').name, 'html');
});

test('xml: BOM, leading comments and trailing whitespace are accepted', () => {
  assert.equal(parseXml('\uFEFF<!-- hi --><a/>\n\n<!-- bye -->\n').name, 'a');
});

test('xml: mismatched and unclosed tags report exact messages with line and column', () => {
  throwsIngest(() => parseXml('<a>\n  <b></c>\n</a>'), 'XML: mismatched closing tag </c>, expected </b> at line 2, column 6', 2, 6);
  throwsIngest(() => parseXml('<a>\n<b>'), 'XML: unclosed element <b> at line 2, column 1', 2, 1);
  throwsIngest(() => parseXml('</a>'), 'XML: unexpected closing tag at line 1, column 1');
  throwsIngest(() => parseXml('<a>\r\n<b/>\r\n</a >\r\n<c/>'), 'XML: unexpected content after the root element at line 4, column 1', 4, 1);
});

test('xml: other malformed input reports exact messages', () => {
  throwsIngest(() => parseXml(''), 'XML: no root element at line 1, column 1');
  throwsIngest(() => parseXml('hello'), 'XML: text before the root element at line 1, column 1');
  throwsIngest(() => parseXml('<p:a/>'), "XML: undeclared namespace prefix 'p' at line 1, column 2");
  throwsIngest(() => parseXml('<a q:x="1"/>'), "XML: undeclared namespace prefix 'q' at line 1, column 4");
  throwsIngest(() => parseXml('<a x="1" x="2"/>'), "XML: duplicate attribute 'x' at line 1, column 10");
  throwsIngest(() => parseXml('<a x=1/>'), "XML: value of attribute 'x' must be quoted at line 1, column 6");
  throwsIngest(() => parseXml('<a x="<"/>'), "XML: '<' not allowed in value of attribute 'x' at line 1, column 7");
  throwsIngest(() => parseXml('<a x="1"y="2"/>'), "XML: missing whitespace before attribute 'y' at line 1, column 9");
  throwsIngest(() => parseXml('<a>&foo;</a>'), "XML: undefined entity '&foo;' at line 1, column 4");
  throwsIngest(() => parseXml('<a>\n fish & chips</a>'), "XML: '&' must start an entity or character reference (write '&amp;') at line 2, column 7");
  throwsIngest(() => parseXml('<a>&#0;</a>'), "XML: invalid character reference '&#0;' at line 1, column 4");
  throwsIngest(() => parseXml('<a>&#xD800;</a>'), "XML: invalid character reference '&#xD800;' at line 1, column 4");
  throwsIngest(() => parseXml('<a><!-- x</a>'), 'XML: unterminated comment at line 1, column 4');
  throwsIngest(() => parseXml('<a><![CDATA[x</a>'), 'XML: unterminated CDATA section at line 1, column 4');
  throwsIngest(() => parseXml('<a'), 'XML: unterminated start tag <a> at line 1, column 1');
  throwsIngest(() => parseXml('<a xmlns:p=""/>'), "XML: namespace prefix 'p' cannot be bound to an empty URI at line 1, column 4");
  throwsIngest(() => parseXml('<a/><!DOCTYPE a>'), 'XML: misplaced DOCTYPE declaration at line 1, column 5');
});

test('xml: nesting depth is bounded', () => {
  const deep = (n: number): string => '<a>'.repeat(n) + '</a>'.repeat(n);
  assert.equal(parseXml(deep(256)).name, 'a');
  throwsIngest(() => parseXml(deep(257)), 'XML: elements nested deeper than 256 at line 1, column 769');
  throwsIngest(() => parseXml(deep(5), { maxDepth: 4 }), 'XML: elements nested deeper than 4 at line 1, column 13');
});

// ---------------------------------------------------------------- WSDL

const SMALL_WSDL = `<?xml version="1.0"?>
<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" xmlns:tns="urn:t" targetNamespace="urn:t">
  <wsdl:message name="In"><wsdl:part name="p" type="xsd:string"/></wsdl:message>
  <wsdl:portType name="Lonely">
    <wsdl:operation name="Ping"><wsdl:documentation>Checks &amp; answers.</wsdl:documentation><wsdl:input message="tns:In"/></wsdl:operation>
    <wsdl:operation name="Pong"><wsdl:output message="tns:In"/></wsdl:operation>
  </wsdl:portType>
</wsdl:definitions>`;

test('wsdl: portTypes without a service still get a service document', () => {
  const r = parseWsdl(SMALL_WSDL);
  assert.equal(r.title, undefined);
  assert.equal(r.serverUrl, undefined);
  assert.deepEqual(r.endpoints, [
    { method: 'SOAP', path: 'Ping', documentIndex: 0 },
    { method: 'SOAP', path: 'Pong', documentIndex: 0 },
  ]);
  assert.equal(r.documents.length, 1);
  assert.equal(r.documents[0].kind, 'service');
  assert.equal(r.documents[0].title, 'Lonely');
  assert.match(r.documents[0].text, /- Ping \(one-way\)\n {2}Checks & answers\.\n {2}Input: In \(p: type xsd:string\)/);
  assert.match(r.documents[0].text, /- Pong \(notification\)/);
});

// A WSDL split over several files (WSDL 1.1 §2.1.1 "import"): each file holds only some of the
// definitions, and is still a valid source with documents for what it holds.
const MESSAGES_ONLY = `<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" name="Msgs" targetNamespace="urn:m">
  <wsdl:message name="QuoteRequest"><wsdl:documentation>Asks for a quote.</wsdl:documentation><wsdl:part name="symbol" type="xsd:string"/></wsdl:message>
  <wsdl:message name="QuoteResponse"><wsdl:part name="price" element="tns:Price"/><wsdl:part name="at" type="xsd:dateTime"/></wsdl:message>
  <wsdl:message name="Empty"/>
</wsdl:definitions>`;
const BINDING_ONLY = `<definitions xmlns="http://schemas.xmlsoap.org/wsdl/" xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/" xmlns:defs="urn:d">
  <import namespace="urn:d" location="porttypes.wsdl"/>
  <binding name="QuoteBinding" type="defs:QuotePortType">
    <soap:binding style="rpc" transport="http://schemas.xmlsoap.org/soap/http"/>
    <operation name="GetQuote"><soap:operation soapAction="urn:GetQuote"/></operation>
    <operation name="Ping"/>
  </binding>
</definitions>`;

test('wsdl: a file holding only messages → one message document each, no endpoints, no server URL', () => {
  const r = parseWsdl(MESSAGES_ONLY);
  assert.equal(r.title, 'Msgs');
  assert.equal(r.serverUrl, undefined);
  assert.deepEqual(r.endpoints, []);
  assert.deepEqual(r.documents.map((d) => [d.kind, d.title]), [['message', 'QuoteRequest'], ['message', 'QuoteResponse'], ['message', 'Empty']]);
  assert.equal(r.documents[0].text, 'Message QuoteRequest (WSDL 1.1)\nTarget namespace: urn:m\n\nAsks for a quote.\n\nParts:\n- symbol: type xsd:string');
  assert.equal(r.documents[1].text, 'Message QuoteResponse (WSDL 1.1)\nTarget namespace: urn:m\n\nParts:\n- price: element tns:Price\n- at: type xsd:dateTime');
  assert.equal(r.documents[2].text, 'Message Empty (WSDL 1.1)\nTarget namespace: urn:m\n\nNo parts.');
});

test('wsdl: a binding whose port type is in another file → a binding document with its operations, an import document', () => {
  const r = parseWsdl(BINDING_ONLY);
  assert.deepEqual(r.endpoints, []);
  assert.deepEqual(r.documents.map((d) => [d.kind, d.title]), [['binding', 'QuoteBinding'], ['import', 'porttypes.wsdl']]);
  assert.equal(r.documents[0].text, [
    'Binding QuoteBinding (WSDL 1.1, not exposed by any service)', '',
    'Operations (binding QuoteBinding, SOAP 1.1, rpc style; port type QuotePortType is defined in another file):',
    '- GetQuote', '  SOAPAction: urn:GetQuote', '- Ping',
  ].join('\n'));
  assert.equal(r.documents[1].text, 'Import (WSDL 1.1) of namespace urn:d from porttypes.wsdl\n\nThe imported definitions are in that file, which is not fetched: add it as a source of its own.');
});

test('wsdl: messages that an operation uses are described in its port type, not again on their own', () => {
  const r = parseWsdl(SMALL_WSDL);
  assert.deepEqual(r.documents.map((d) => d.kind), ['service']);
});

test('wsdl: the import-only cxf1662 file → one import document per import', () => {
  const r = parseWsdl(readFileSync(new URL('soap/cxf-cxf1662-import-only.wsdl', CORPUS), 'utf8'));
  assert.equal(r.title, 'Parent');
  assert.deepEqual(r.endpoints, []);
  assert.deepEqual(r.documents.map((d) => [d.kind, d.title]), [['import', 'child.wsdl'], ['import', 'child2.wsdl']]);
  assert.match(r.documents[0].text, /^Import \(WSDL 1\.1\) of namespace http:\/\/child\/ from child\.wsdl\n/);
});

test('wsdl: a service whose binding\'s port type is imported lists the binding\'s operations', () => {
  const r = parseWsdl(readFileSync(new URL('soap/xmlschema-stockquoteservice-imported-porttype.wsdl', CORPUS), 'utf8'));
  assert.deepEqual(r.endpoints, []);
  assert.equal(r.serverUrl, 'http://example.com/stockquote');
  assert.deepEqual(r.documents.map((d) => [d.kind, d.title]), [['service', 'StockQuoteService'], ['import', 'stockquote.wsdl']]);
  assert.ok(r.documents[0].text.endsWith([
    'Operations (binding StockQuoteBinding, SOAP 1.1, document style; port type StockQuotePortType is defined in another file):',
    '- GetLastTradePrice', '  SOAPAction: http://example.com/GetLastTradePrice',
  ].join('\n')), r.documents[0].text);
});

test('wsdl: non-WSDL roots and WSDL 2.0 are rejected with clear messages', () => {
  throwsIngest(() => parseWsdl('<?xml version="1.0"?>\n<html><body/></html>'),
    'WSDL: root element <html> is not a WSDL 1.1 <definitions> (namespace http://schemas.xmlsoap.org/wsdl/) at line 2, column 1', 2, 1);
  throwsIngest(() => parseWsdl('<definitions name="x"/>'),
    'WSDL: root element <definitions> is not a WSDL 1.1 <definitions> (namespace http://schemas.xmlsoap.org/wsdl/) at line 1, column 1');
  throwsIngest(() => parseWsdl('<description xmlns="http://www.w3.org/ns/wsdl"/>'),
    'WSDL: WSDL 2.0 <description> documents are not supported (expected WSDL 1.1 <definitions>) at line 1, column 1');
  throwsIngest(() => parseWsdl('<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/">\n<wsdl:service>\n</wsdl:definitions>'),
    'XML: mismatched closing tag </wsdl:definitions>, expected </wsdl:service> at line 3, column 1', 3, 1);
});

test('wsdl: zeep-soap.wsdl — service document content, title and server URL', () => {
  const r = parseWsdl(readFileSync(new URL('soap/zeep-soap.wsdl', CORPUS), 'utf8'));
  assert.equal(r.title, 'StockQuote');
  assert.equal(r.serverUrl, 'http://example.com/stockquote');
  assert.deepEqual(r.endpoints.map((e) => `${e.method} ${e.path}`), ['SOAP GetLastTradePrice', 'SOAP GetLastTradePriceNoOutput']);
  const doc = r.documents[0];
  assert.equal(doc.title, 'StockQuoteService');
  for (const needle of [
    'My first service',
    '- StockQuotePort: http://example.com/stockquote (SOAP 1.1, document style, binding StockQuoteBinding, port type StockQuotePortType)',
    '  Input: GetLastTradePriceInput (body: element xsd1:TradePriceRequest)',
    '  Output: GetLastTradePriceOutput (body: element xsd1:TradePrice)',
    '  Fault fault1: FaultMessageMsg1 (fault1: element xsd1:Fault1)',
    '  SOAPAction (StockQuoteBinding): http://example.com/GetLastTradePrice',
    '- GetLastTradePriceNoOutput (one-way)',
  ]) assert.ok(doc.text.includes(needle), `missing ${JSON.stringify(needle)} in\n${doc.text}`);
});

test('wsdl: SOAP 1.2, HTTP bindings and multi-service files', () => {
  const soap12 = parseWsdl(readFileSync(new URL('soap/cxf-hello-world-soap12.wsdl', CORPUS), 'utf8'));
  assert.equal(soap12.serverUrl, 'http://localhost:9000/SoapContext/SoapPort');
  assert.match(soap12.documents[0].text, /SOAP 1\.2/);
  const http = parseWsdl(readFileSync(new URL('soap/zeep-http-binding.wsdl', CORPUS), 'utf8'));
  assert.equal(http.serverUrl, 'http://example.com/stockquote');
  assert.match(http.documents[0].text, /HTTP (GET|POST)/);
  const multi = parseWsdl(readFileSync(new URL('soap/cxf-testutils-hello-world.wsdl', CORPUS), 'utf8'));
  assert.equal(multi.documents.length, 10);
  const bare = multi.documents.findIndex((d) => d.title === 'SOAPService_DocLitBare');
  assert.ok(bare > 0);
  const docLitOps = multi.endpoints.filter((e) => e.documentIndex === bare);
  assert.equal(docLitOps.length, 1, 'the DocLitBare operation links to the first service exposing it');
});

for (const file of readdirSync(new URL('soap/', CORPUS)).filter((f) => f.endsWith('.wsdl')).sort()) {
  test(`wsdl corpus: soap/${file}`, { skip: PENDING_AUTO[`soap/${file}`] }, () => {
    const expected = EXPECTED[`soap/${file}`];
    assert.ok(expected, `no expected.json entry for soap/${file}`);
    const r = parseWsdl(readFileSync(new URL(`soap/${file}`, CORPUS), 'utf8'));
    assert.equal(r.endpoints.length, expected.endpoints);
    assert.ok(r.endpoints.every((e) => e.method === 'SOAP' && e.path.length > 0));
    assert.ok(r.documents.length > 0);
    assert.equal(r.documents.length, expected.documents ?? expected.services, 'documents');
    if (expected.services !== undefined) assert.equal(r.documents.filter((d) => d.kind === 'service').length, expected.services, 'service documents');
    assert.equal(r.documents.filter((d) => d.kind === 'import').length, expected.imports ?? 0, 'import documents');
    for (const d of r.documents) {
      assert.ok(['service', 'import'].includes(d.kind), d.kind);
      assert.ok(d.title.length > 0);
      assert.ok(d.text.trim().length > 0);
    }
    for (const e of r.endpoints) {
      assert.ok(e.documentIndex !== undefined && r.documents[e.documentIndex], `endpoint ${e.path} has a document`);
      assert.ok(r.documents[e.documentIndex].text.includes(`- ${e.path}`), `${e.path} is described in its document`);
    }
    assert.ok(r.title);
    if (expected.services === 0) assert.equal(r.serverUrl, undefined);
    else assert.match(r.serverUrl ?? '', /^(https?:\/\/|FOO$)/);
  });
}
