/**
 * WSDL 1.1 parser (docs/sources.md#what-ingestion-extracts): one `SOAP` endpoint per portType operation, `service`
 * documents. QName references (`tns:Foo`) are matched by local name, which is unambiguous within one WSDL file.
 */
import { IngestError, parsedSource, type ParsedDocument, type ParsedEndpoint, type ParsedSource } from '../types.js';
import { childElements, firstChild, parseXml, textContent, type XmlElement } from './xml.js';

const WSDL_NS = 'http://schemas.xmlsoap.org/wsdl/';
const WSDL20_NS = 'http://www.w3.org/ns/wsdl';
const SOAP11_NS = 'http://schemas.xmlsoap.org/wsdl/soap/';
const SOAP12_NS = 'http://schemas.xmlsoap.org/wsdl/soap12/';
const HTTP_NS = 'http://schemas.xmlsoap.org/wsdl/http/';

interface MessageRef { name?: string; message: string }
interface Operation { name: string; doc: string; input?: MessageRef; output?: MessageRef; faults: MessageRef[] }
interface PortType { name: string; doc: string; operations: Operation[] }
interface Binding { name: string; portType: string; protocol: string; style?: string; operations: string[];
  actions: Map<string, string> }
interface Import { namespace?: string; location?: string }
interface Port { name: string; binding: string; address?: string; protocol?: string }
interface Service { name: string; doc: string; ports: Port[] }

/** Local part of a QName (`tns:Foo` → `Foo`). */
function localName(qname: string | undefined): string {
  if (!qname) return '';
  const i = qname.indexOf(':');
  return i === -1 ? qname : qname.slice(i + 1);
}

/** Collapsed text of the `wsdl:documentation` children of `el`. */
function documentation(el: XmlElement): string {
  return childElements(el, 'documentation', WSDL_NS)
    .map((d) => textContent(d).replace(/\s+/g, ' ').trim())
    .filter(Boolean)
    .join('\n');
}

function messageRef(el: XmlElement | undefined): MessageRef | undefined {
  if (!el) return undefined;
  return { name: el.attrs.name, message: localName(el.attrs.message) };
}

function protocolOf(el: XmlElement): string | undefined {
  if (el.ns === SOAP11_NS) return 'SOAP 1.1';
  if (el.ns === SOAP12_NS) return 'SOAP 1.2';
  if (el.ns === HTTP_NS) return el.attrs.verb ? `HTTP ${el.attrs.verb}` : 'HTTP';
  return undefined;
}

function readBinding(el: XmlElement): Binding {
  const b: Binding = { name: el.attrs.name ?? '', portType: localName(el.attrs.type), protocol: 'unknown',
    operations: [], actions: new Map() };
  for (const c of el.children) {
    if (c.local !== 'binding') continue;
    const p = protocolOf(c);
    if (p) {
      b.protocol = p;
      b.style = c.attrs.style;
    }
  }
  for (const op of childElements(el, 'operation', WSDL_NS)) {
    if (op.attrs.name) b.operations.push(op.attrs.name);
    for (const c of op.children) {
      if (c.local !== 'operation' || !protocolOf(c)) continue;
      const action = c.attrs.soapAction ?? c.attrs.location;
      if (action && op.attrs.name) b.actions.set(op.attrs.name, action);
    }
  }
  return b;
}

/** `Location` for an HTTP binding's action, else `SOAPAction`. */
const actionLabel = (b: Binding): string => (b.protocol.startsWith('HTTP') ? 'Location' : 'SOAPAction');

function readService(el: XmlElement): Service {
  const ports = childElements(el, 'port', WSDL_NS).map((p): Port => {
    const addr = p.children.find((c) => c.local === 'address' && protocolOf(c) !== undefined);
    return { name: p.attrs.name ?? '', binding: localName(p.attrs.binding), address: addr?.attrs.location,
      protocol: addr ? protocolOf(addr) : undefined };
  });
  return { name: el.attrs.name ?? '', doc: documentation(el), ports };
}

function readPortType(el: XmlElement): PortType {
  const operations = childElements(el, 'operation', WSDL_NS).map((op): Operation => ({
    name: op.attrs.name ?? '',
    doc: documentation(op),
    input: messageRef(firstChild(op, 'input', WSDL_NS)),
    output: messageRef(firstChild(op, 'output', WSDL_NS)),
    faults: childElements(op, 'fault', WSDL_NS).map((f) => messageRef(f) as MessageRef),
  }));
  return { name: el.attrs.name ?? '', doc: documentation(el), operations };
}

/** `part: element xsd:Foo` for each part of a message. */
function partsOf(msg: XmlElement): string[] {
  return childElements(msg, 'part', WSDL_NS).map((p) => {
    const what = p.attrs.element ? `element ${p.attrs.element}` : p.attrs.type ? `type ${p.attrs.type}` : 'untyped';
    return `${p.attrs.name ?? '?'}: ${what}`;
  });
}

/** `Name (part: element xsd:Foo, part2: type xsd:int)` for a message reference. */
function describeMessage(ref: MessageRef, messages: Map<string, XmlElement>): string {
  const msg = messages.get(ref.message);
  const parts = msg ? partsOf(msg) : [];
  return parts.length ? `${ref.message} (${parts.join(', ')})` : ref.message;
}

function describeOperations(pt: PortType, bindings: Binding[], messages: Map<string, XmlElement>): string[] {
  const lines = [`Operations (port type ${pt.name}):`];
  if (pt.doc) lines.push(pt.doc);
  for (const op of pt.operations) {
    const kind = op.input && op.output ? '' : op.input ? ' (one-way)' : op.output ? ' (notification)' : '';
    lines.push(`- ${op.name}${kind}`);
    if (op.doc) lines.push(`  ${op.doc}`);
    if (op.input) lines.push(`  Input: ${describeMessage(op.input, messages)}`);
    if (op.output) lines.push(`  Output: ${describeMessage(op.output, messages)}`);
    for (const f of op.faults) lines.push(`  Fault${f.name ? ` ${f.name}` : ''}: ${describeMessage(f, messages)}`);
    for (const b of bindings) {
      const action = b.actions.get(op.name);
      if (action) lines.push(`  ${actionLabel(b)} (${b.name}): ${action}`);
    }
  }
  return lines;
}

/** The operations of a binding whose port type is not in this file: names and SOAP actions. */
function describeBinding(b: Binding): string[] {
  const lines = [`Operations (binding ${b.name}, ` +
    `${b.protocol === 'unknown' ? 'unknown protocol' : b.protocol}${b.style ? `, ${b.style} style` : ''}; port type ` +
      `${b.portType || '?'} is defined in another file):`];
  for (const op of b.operations) {
    const action = b.actions.get(op);
    lines.push(`- ${op}`);
    if (action) lines.push(`  ${actionLabel(b)}: ${action}`);
  }
  if (b.operations.length === 0) lines.push('(none)');
  return lines;
}

/** `first`, then the target namespace line when there is one: how every document starts. */
const heading = (first: string, targetNs: string | undefined): string[] =>
  (targetNs ? [first, `Target namespace: ${targetNs}`] : [first]);

/** A `message` document (for a message no operation of this file uses): its parts with their elements or types. */
function messageDocument(name: string, el: XmlElement, targetNs: string | undefined): ParsedDocument {
  const lines = heading(`Message ${name} (WSDL 1.1)`, targetNs);
  const doc = documentation(el);
  if (doc) lines.push('', doc);
  const parts = partsOf(el);
  lines.push('', parts.length ? 'Parts:' : 'No parts.', ...parts.map((p) => `- ${p}`));
  return { kind: 'message', title: name, text: lines.join('\n') };
}

/**
 * Parses a WSDL 1.1 document: one `SOAP` endpoint (path: the operation name) per `portType` operation, in document
 * order; one `service` document per `wsdl:service` (documentation, ports, the operations of the port types it exposes
 * with messages, SOAP actions and documentation) and per port type no service exposes, then documents for what those
 * leave out (bindings, unused messages, imports). `title` is `definitions@name`, else the first service's name;
 * `serverUrl` the first SOAP (1.1 or 1.2) `address@location`, else the first HTTP-binding address.
 * @throws {IngestError} `XML: …` (with line and column) for malformed XML; `WSDL: …` when the root element is not a
 *   WSDL 1.1 `definitions` element (e.g. a WSDL 2.0 `description`).
 */
export function parseWsdl(text: string): ParsedSource {
  const root = parseXml(text);
  if (root.ns === WSDL20_NS && root.local === 'description') {
    throw new IngestError('WSDL: WSDL 2.0 <description> documents are not supported (expected WSDL 1.1 <definitions>)',
      root.line, root.column);
  }
  if (root.local !== 'definitions' || root.ns !== WSDL_NS) {
    throw new IngestError(`WSDL: root element <${root.name}>${root.ns ? ` in namespace ${root.ns}` : ''} is not a `
      + `WSDL 1.1 <definitions> (namespace ${WSDL_NS})`, root.line, root.column);
  }

  const messages = new Map<string, XmlElement>();
  const portTypes: PortType[] = [];
  const bindings: Binding[] = [];
  const services: Service[] = [];
  const imports: Import[] = [];
  for (const el of root.children) {
    if (el.ns !== WSDL_NS) continue;
    if (el.local === 'import') imports.push({ namespace: el.attrs.namespace, location: el.attrs.location });
    else if (el.local === 'message' && el.attrs.name) messages.set(el.attrs.name, el);
    else if (el.local === 'portType') portTypes.push(readPortType(el));
    else if (el.local === 'binding') bindings.push(readBinding(el));
    else if (el.local === 'service') services.push(readService(el));
  }
  const portTypeByName = new Map(portTypes.map((p) => [p.name, p] as const));
  const bindingByName = new Map(bindings.map((b) => [b.name, b] as const));
  const bindingsOf = (pt: PortType): Binding[] => bindings.filter((b) => b.portType === pt.name);

  const documents: ParsedDocument[] = [];
  const docOfPortType = new Map<string, number>();
  /** Bindings whose operations a document lists already (their port type being elsewhere). */
  const described = new Set<Binding>();
  const targetNs = root.attrs.targetNamespace;

  for (const svc of services) {
    const lines = heading(`Service ${svc.name} (WSDL 1.1)`, targetNs);
    if (svc.doc) lines.push('', svc.doc);
    const exposed: PortType[] = [];
    if (svc.ports.length) lines.push('', 'Ports:');
    for (const port of svc.ports) {
      const binding = bindingByName.get(port.binding);
      const protocol = binding && binding.protocol !== 'unknown' ? binding.protocol : port.protocol ??
        'unknown protocol';
      const style = binding?.style ? `, ${binding.style} style` : '';
      lines.push(`- ${port.name}: ${port.address ?? '(no address)'} (${protocol}${style}, binding ` +
        `${port.binding || '?'}${binding?.portType ? `, port type ${binding.portType}` : ''})`);
      const pt = binding && portTypeByName.get(binding.portType);
      if (pt && !exposed.includes(pt)) exposed.push(pt);
    }
    const index = documents.length;
    for (const pt of exposed) {
      lines.push('', ...describeOperations(pt, bindingsOf(pt), messages));
      if (!docOfPortType.has(pt.name)) docOfPortType.set(pt.name, index);
    }
    for (const b of new Set(svc.ports.map((p) => bindingByName.get(p.binding)))) {
      if (b && !portTypeByName.has(b.portType)) { lines.push('', ...describeBinding(b)); described.add(b); }
    }
    documents.push({ kind: 'service', title: svc.name || 'Unnamed service', text: lines.join('\n') });
  }
  for (const pt of portTypes) {
    if (docOfPortType.has(pt.name)) continue;
    docOfPortType.set(pt.name, documents.length);
    const lines = heading(`Port type ${pt.name} (WSDL 1.1, not exposed by any service)`, targetNs);
    lines.push('', ...describeOperations(pt, bindingsOf(pt), messages));
    documents.push({ kind: 'service', title: pt.name || 'Unnamed port type', text: lines.join('\n') });
  }

  // What the documents above do not cover gets documents of its own, so a file that holds only some of the definitions
  // (split WSDLs import one another) is still searchable.
  for (const b of bindings) {
    if (portTypeByName.has(b.portType) || described.has(b)) continue;
    const lines = heading(`Binding ${b.name} (WSDL 1.1, not exposed by any service)`, targetNs);
    lines.push('', ...describeBinding(b));
    documents.push({ kind: 'binding', title: b.name || 'Unnamed binding', text: lines.join('\n') });
  }
  const used = new Set(portTypes.flatMap((pt) => pt.operations.flatMap((op) => [op.input, op.output, ...op.faults].map((
    r) => r?.message))));
  for (const [name, el] of messages) if (!used.has(name)) documents.push(messageDocument(name, el, targetNs));
  for (const imp of imports) {
    const lines = heading(`Import (WSDL 1.1) of namespace ${imp.namespace ?? '(none)'} from ` +
      `${imp.location ?? '(no location)'}`, targetNs);
    lines.push('', 'The imported definitions are in that file, which is not fetched: add it as a source of its own.');
    documents.push({ kind: 'import', title: imp.location || imp.namespace || 'Unnamed import',
      text: lines.join('\n') });
  }

  const endpoints: ParsedEndpoint[] = portTypes.flatMap((pt) => pt.operations.map((op) => ({ method: 'SOAP',
    path: op.name, documentIndex: docOfPortType.get(pt.name) })));

  const ports = services.flatMap((s) => s.ports);
  const soapPort = ports.find((p) => p.address && p.protocol?.startsWith('SOAP'));
  const anyPort = ports.find((p) => p.address);
  return parsedSource(documents, endpoints, root.attrs.name || services[0]?.name, (soapPort ?? anyPort)?.address);
}
