/**
 * One operation on a docs page (docs/web.md#operations), read from the text ingestion stored for
 * it: the description as Markdown, a parameters table, the request body and each response with
 * its schema tree, an example (the document's, else generated from the schema) and a request
 * sample (`curl`, `grpcurl`, or an example message) with a copy button. Per source type: OpenAPI
 * and Postman (HTTP), AsyncAPI (channels), GraphQL (root fields), gRPC (RPCs), SOAP (operations).
 */
import { html, type Html } from './html.js';
import { markdown } from './markdown.js';
import { expand, exampleOf, namedIn, parseProps, propLine, schemaTree, type NamedSchema, type Prop }
  from './docsSchema.js';
import { sampleOf } from './docsSample.js';

export interface Param { name: string; in: string; type: string; required: boolean; description: string }
/** A request body, a response or a message: its schema tree and example (JSON text). */
export interface Payload { label: string; description: string; media: string; type: string; props: Prop[];
  example: string | null; tree: Html }
export interface OpView {
  description: string;
  facts: Array<[string, string]>;
  params: Param[];
  body: Payload | null;
  responses: Payload[];
}

/** What an operation needs besides its text: its method, path, document kind, and the source's schemas and server. */
export interface OpInput { method: string; path: string; kind: string | null; text: string }
export interface OpContext { schemas: ReadonlyMap<string, NamedSchema>; serverUrl: string | null;
  /** A named schema's expanded tree and generated example, made once per render. */
  trees?: Map<string, { props: Prop[]; example: string | null; html: Html }> }

const SECTION = /^(Parameters|Responses|Callbacks|Operations|Messages|Fields|RPCs|Ports):$|^Request body/;

/** Splits text into the lines before the first section heading and the sections (heading, lines). */
function sections(text: string): { head: string[]; parts: Array<{ title: string; lines: string[] }> } {
  const lines = text.split('\n');
  const head: string[] = [];
  const parts: Array<{ title: string; lines: string[] }> = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    if (SECTION.test(l) && (i === 0 || lines[i - 1].trim() === '') && lines[i + 1]?.startsWith('- ')) {
      parts.push({ title: l, lines: [] });
    } else if (parts.length) parts[parts.length - 1].lines.push(l);
    else head.push(l);
  }
  return { head, parts };
}

/** The pretty JSON of an `Example: {…}` line's value, or null. */
function exampleText(line: string | undefined): string | null {
  if (!line) return null;
  try { return JSON.stringify(JSON.parse(line.trim().slice(9)), null, 2); } catch { return null; }
}

/** Pretty JSON of a value generated from a tree, or null when there is nothing to show. */
function generated(props: Prop[], ctx: OpContext): string | null {
  return props.length ? JSON.stringify(exampleOf(props, ctx.schemas), null, 2) : null;
}

/** A payload from its type label and the lines below it (properties, `Example:`). */
function payload(label: string, description: string, media: string, type: string, lines: string[], ctx: OpContext,
  detailed = true): Payload {
  let props = parseProps(lines.filter((l) => !l.trim().startsWith('Example: ')));
  // The payload's own schema is on the path: a property referring back to it is the cycle, shown once.
  const name = namedIn(type, ctx.schemas);
  // An error response's named schema is shown by name (its tree is under "Other documents"), which
  // keeps a page of many operations sharing one error schema small.
  const given = exampleText(lines.find((l) => l.trim().startsWith('Example: ')));
  let example: string | null;
  let tree: Html;
  if (!props.length && name && detailed) {
    const trees = (ctx.trees ??= new Map());
    let t = trees.get(name);
    if (!t) {
      const expanded = expand(ctx.schemas.get(name)!.props, ctx.schemas, new Set([name]));
      t = { props: expanded, example: generated(expanded, ctx), html: schemaTree(expanded) };
      trees.set(name, t);
    }
    props = t.props;
    tree = t.html;
    example = given ?? t.example;
  } else {
    props = expand(props, ctx.schemas, name ? new Set([name]) : undefined);
    tree = schemaTree(props);
    example = given ?? generated(props, ctx);
  }
  if (example && type.startsWith('array of') && !given) example = `[\n${example.replace(/^/gm, '  ')}\n]`;
  return { label, description, media, type, props, example, tree };
}

/** OpenAPI / Swagger operation text (src/ingest/parsers/openapi.ts `operationDocument`). */
function openapi(op: OpInput, ctx: OpContext): OpView {
  const { head, parts } = sections(op.text);
  const facts: Array<[string, string]> = [];
  const desc: string[] = [];
  for (const l of head) {
    if (l.startsWith('Operation ID: ')) facts.push(['Operation ID', l.slice(14)]);
    else if (l === 'Deprecated.') facts.push(['Deprecated', 'yes']);
    else if (l.startsWith('Tags: ')) continue;
    else desc.push(l);
  }
  const view: OpView = { description: desc.join('\n').trim(), facts, params: [], body: null, responses: [] };
  for (const part of parts) {
    if (part.title === 'Parameters:') {
      for (const l of part.lines) {
        // - name (in, required): type — description
        const m = propLine(l);
        if (!m) continue;
        const [where, req] = m.label.split(', ');
        const dash = m.description.indexOf(' — ');
        view.params.push({ name: m.name, in: where, required: req === 'required',
          type: dash === -1 ? m.description : m.description.slice(0, dash),
          description: dash === -1 ? '' : m.description.slice(dash + 3) });
      }
    } else if (part.title.startsWith('Request body')) {
      const required = part.title.startsWith('Request body (required)');
      const description = part.title.slice(part.title.indexOf(':') + 1).trim();
      const first = part.lines.find((l) => l.startsWith('- ')) ?? '';
      const colon = first.indexOf(': ');
      const media = colon === -1 ? '' : first.slice(2, colon);
      const type = colon === -1 ? '' : first.slice(colon + 2);
      const rest = part.lines.filter((l) => l !== first);
      view.body = payload(required ? 'Request body (required)' : 'Request body', description, media, type, rest, ctx);
    } else if (part.title === 'Responses:') {
      for (const r of bulletGroups(part.lines)) {
        const colon = r.head.indexOf(': ');
        const code = colon === -1 ? r.head : r.head.slice(0, colon);
        let description = colon === -1 ? '' : r.head.slice(colon + 2);
        let media = '';
        let type = '';
        const dash = description.lastIndexOf(' — ');
        if (dash !== -1) {
          const shape = description.slice(dash + 3);
          description = description.slice(0, dash);
          const c = shape.indexOf(': ');
          if (c !== -1 && shape.slice(0, c).includes('/')) { media = shape.slice(0, c); type = shape.slice(c + 2); }
          else type = shape;
        }
        if (description === '(no description)') description = '';
        view.responses.push(payload(code, description, media, type, r.lines, ctx, /^[123]/.test(code)));
      }
    } else view.description += `\n\n**${part.title.slice(0, -1)}**\n\n${part.lines.join('\n')}`;
  }
  return view;
}

/** Postman request text: `Folder:`, `GET url`, description, `Query parameters:`, `Headers:`, `Body (mode):`. */
function postman(op: OpInput): OpView {
  const lines = op.text.split('\n');
  const view: OpView = { description: '', facts: [], params: [], body: null, responses: [] };
  const desc: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    if (l.startsWith('Folder: ')) view.facts.push(['Folder', l.slice(8)]);
    else if (l.startsWith(`${op.method} `) && i < 2) view.facts.push(['URL', l.slice(op.method.length + 1)]);
    else if (l.startsWith('Query parameters: ')) {
      for (const q of l.slice(18).split(', ')) {
        const eq = q.indexOf('=');
        view.params.push({ name: eq === -1 ? q : q.slice(0, eq), in: 'query', type: 'string', required: false,
          description: eq === -1 ? '' : `Example: \`${q.slice(eq + 1)}\`` });
      }
    } else if (l.startsWith('Headers: ')) {
      for (const h of l.slice(9).split(', ')) view.params.push({ name: h, in: 'header', type: 'string', required: false,
        description: '' });
    } else if (l.startsWith('Body (')) {
      const body = lines.slice(i + 1).join('\n');
      let example = body;
      try { example = JSON.stringify(JSON.parse(body), null, 2); } catch { /* not JSON: as written */ }
      view.body = { label: 'Request body', description: '', media: l.slice(6, -2), type: '', props: [], example,
        tree: html`` };
      break;
    } else desc.push(l);
  }
  for (const seg of op.path.split('/')) {
    if (seg.startsWith(':')) view.params.unshift({ name: seg.slice(1), in: 'path', type: 'string', required: true,
      description: '' });
  }
  view.description = desc.join('\n').trim();
  return view;
}

/** The entry of one endpoint in a shared document: the line `- {prefix}…` and the lines indented below it. */
function entry(text: string, starts: (line: string) => boolean): string[] {
  const lines = text.split('\n');
  const at = lines.findIndex(starts);
  if (at === -1) return [];
  const out = [lines[at]];
  for (let i = at + 1; i < lines.length && lines[i].startsWith('  '); i++) out.push(lines[i]);
  return out;
}

/** A GraphQL root field: `- name(arg: Type!, …): Return — description`, argument descriptions below. */
function graphql(op: OpInput, ctx: OpContext): OpView {
  const lines = entry(op.text, (l) => l.startsWith(`- ${op.path}(`) || l.startsWith(`- ${op.path}:`));
  const view: OpView = { description: '', facts: [['Operation', op.method.toLowerCase()]], params: [], body: null,
    responses: [] };
  if (!lines.length) return { ...view, description: op.text };
  const first = lines[0].slice(2 + op.path.length);
  let args = '';
  let rest = first;
  if (first.startsWith('(')) {
    let depth = 0;
    let end = 0;
    for (let i = 0; i < first.length; i++) {
      if (first[i] === '(') depth++;
      else if (first[i] === ')' && --depth === 0) { end = i; break; }
    }
    args = first.slice(1, end);
    rest = first.slice(end + 1);
  }
  const dash = rest.indexOf(' — ');
  const returns = (dash === -1 ? rest : rest.slice(0, dash)).replace(/^: /, '').trim();
  view.description = dash === -1 ? '' : rest.slice(dash + 3);
  const argDesc = new Map<string, string>();
  for (const l of lines.slice(1)) {
    const t = l.trim();
    const c = t.indexOf(': ');
    if (c !== -1) argDesc.set(t.slice(0, c), t.slice(c + 2));
  }
  for (const a of args ? args.split(/, (?=[A-Za-z_]\w*: )/) : []) {
    const c = a.indexOf(': ');
    const type = a.slice(c + 2);
    view.params.push({ name: a.slice(0, c), in: 'argument', type, required: type.replace(/ = .*$/, '').endsWith('!'),
      description: argDesc.get(a.slice(0, c)) ?? '' });
  }
  const base = returns.replace(/[[\]!]/g, '');
  view.responses.push(payload('Returns', '', '', returns.includes('[') ? `array of ${base}` : base, [], ctx));
  return view;
}

/** `(stream Req) returns (stream Resp) — kind` → [stream?, Req, stream?, Resp, kind], or null. */
function rpcLine(rest: string): string[] | null {
  const close = rest.indexOf(')');
  const ret = rest.indexOf(' returns (', close);
  const close2 = rest.indexOf(')', ret + 10);
  if (!rest.startsWith('(') || close === -1 || ret !== close + 1 || close2 === -1) return null;
  const side = (t: string) => (t.startsWith('stream ') ? ['stream', t.slice(7)] : ['', t]);
  const tail = rest.slice(close2 + 1);
  return ['', ...side(rest.slice(1, close)), ...side(rest.slice(ret + 10, close2)),
    tail.startsWith(' — ') ? tail.slice(3) : ''];
}

/** A gRPC method: `- rpc Name(Req) returns (Resp) — kind` and its description below. */
function grpc(op: OpInput, ctx: OpContext): OpView {
  const name = op.path.slice(op.path.lastIndexOf('/') + 1);
  const lines = entry(op.text, (l) => l.startsWith(`- rpc ${name}(`));
  const view: OpView = { description: '', facts: [], params: [], body: null, responses: [] };
  if (!lines.length) return { ...view, description: op.text };
  const m = rpcLine(lines[0].slice(6 + name.length));
  view.description = lines.slice(1).map((l) => l.trim()).join('\n');
  if (!m) return { ...view, description: `${lines[0].slice(2)}\n\n${view.description}` };
  if (m[5]) view.facts.push(['Kind', m[5]]);
  view.body = payload(`Request${m[1] ? ' (stream)' : ''}`, '', '', m[2], [], ctx);
  view.responses.push(payload(`Response${m[3] ? ' (stream)' : ''}`, '', '', m[4], [], ctx));
  return view;
}

/** A SOAP operation: `- name (style)` with `Input:`, `Output:` and `Fault` lines below. */
function soap(op: OpInput): OpView {
  const lines = entry(op.text, (l) => l === `- ${op.path}` || l.startsWith(`- ${op.path} `));
  const view: OpView = { description: '', facts: [], params: [], body: null, responses: [] };
  if (!lines.length) return { ...view, description: op.text };
  const style = lines[0].slice(3 + op.path.length).replace(/^\(|\)$/g, '');
  if (style) view.facts.push(['Style', style]);
  const port = /^- [^:]+: (\S+) \(([^)]*)\)/m.exec(op.text.split('\nPorts:\n')[1] ?? '');
  if (port) view.facts.push(['Endpoint', port[1]], ['Binding', port[2]]);
  for (const l of lines.slice(1).map((x) => x.trim())) {
    const c = l.indexOf(': ');
    if (c === -1) { view.description += `${l}\n`; continue; }
    const p: Payload = { label: l.slice(0, c), description: l.slice(c + 2), media: 'text/xml', type: '', props: [],
      example: null, tree: html`` };
    if (l.startsWith('Input')) view.body = p; else view.responses.push(p);
  }
  return view;
}

/** An AsyncAPI channel: parameters (`- name (type): desc`) and messages with their payload trees. */
function asyncapi(op: OpInput, ctx: OpContext): OpView {
  const { head, parts } = sections(op.text);
  const view: OpView = { description: head.join('\n').trim(), facts: [], params: [], body: null, responses: [] };
  for (const part of parts) {
    if (part.title === 'Parameters:') {
      for (const l of part.lines) {
        const m = propLine(l);
        if (m) view.params.push({ name: m.name, in: 'channel', type: m.label, required: true,
          description: m.description });
      }
    } else if (part.title === 'Messages:') {
      for (const r of bulletGroups(part.lines)) {
        const c = r.head.indexOf(': ');
        const name = c === -1 ? r.head : r.head.slice(0, c);
        let description = c === -1 ? '' : r.head.slice(c + 2);
        const dash = description.lastIndexOf(' — payload: ');
        const type = dash === -1 ? '' : description.slice(dash + 12);
        if (dash !== -1) description = description.slice(0, dash);
        view.responses.push(payload(`Message ${name}`, description, 'payload', type, r.lines, ctx));
      }
    } else if (part.title === 'Operations:') {
      for (const l of part.lines) if (l.startsWith('- ')) view.facts.push(['Operation', l.slice(2)]);
    } else view.description += `\n\n**${part.title.slice(0, -1)}**\n\n${part.lines.join('\n')}`;
  }
  return view;
}

/** The view of one operation, by what its method says its source is. */
export function opView(op: OpInput, ctx: OpContext): OpView {
  const m = op.method.toUpperCase();
  if (m === 'QUERY' || m === 'MUTATION' || m === 'SUBSCRIPTION') return graphql(op, ctx);
  if (m === 'RPC') return grpc(op, ctx);
  if (m === 'SOAP') return soap(op);
  if (m === 'PUBLISH' || m === 'SUBSCRIBE' || m === 'SEND' || m === 'RECEIVE') return asyncapi(op, ctx);
  if (op.kind === 'request') return postman(op);
  return openapi(op, ctx);
}

const paramRow = (p: Param): Html => html`<tr><td data-label="Name"><code>${p.name}</code></td>\
<td data-label="In">${p.in}</td><td data-label="Type"><code class="type">${p.type}</code></td>\
<td data-label="Required">${p.required ? html`<span class="req">required</span>` : 'no'}</td>\
<td data-label="Description">${p.description ? markdown(p.description) : ''}</td></tr>`;

function payloadHtml(p: Payload, id: string, isBody: boolean): Html {
  const head = html`<span class="code-label">${p.label}</span>${
    p.media ? html` <code class="media">${p.media}</code>` : ''}${
    p.type ? html` <code class="type">${p.type}</code>` : ''}`;
  return html`<div class="payload${isBody ? ' body' : ''}"><h5>${head}</h5>
${p.description ? html`<div class="md">${markdown(p.description)}</div>` : ''}
${p.tree}
${p.example ? html`<details class="example"${isBody || p.label.startsWith('2') ? ' open' : ''}>\
<summary>Example</summary>\
<pre class="code"><code id="${id}">${p.example}</code></pre></details>` : ''}</div>`;
}

/** The operation's parts as HTML: description, facts, parameters, body, responses, sample. `id`: its anchor. */
export function operationHtml(op: OpInput, ctx: OpContext, id: string): Html {
  const v = opView(op, ctx);
  const sample = sampleOf(op, v, ctx.serverUrl);
  return html`${v.description ? html`<div class="md">${markdown(v.description, { headingBase: 5 })}</div>` : ''}
${v.facts.length ? html`<dl class="facts op-facts">${
  v.facts.map(([k, val]) => html`<dt>${k}</dt><dd><code>${val}</code></dd>`)}</dl>` : ''}
${v.params.length ? html`<h5>Parameters</h5><div class="table-wrap"><table class="params stack">
<thead><tr><th>Name</th><th>In</th><th>Type</th><th>Required</th><th>Description</th></tr></thead>
<tbody>${v.params.map(paramRow)}</tbody></table></div>` : ''}
${v.body ? payloadHtml(v.body, `${id}-body`, true) : ''}
${v.responses.length ? html`<h5>${op.method === 'RPC' || op.method === 'SOAP' ||
  v.responses[0].label.startsWith('Message') || v.responses[0].label === 'Returns' ? 'Answers' : 'Responses'}</h5>
${v.responses.map((r, k) => payloadHtml(r, `${id}-r${k}`, false))}` : ''}
${sample ? html`<div class="sample"><div class="sample-head"><span class="code-label">${sample.label}</span>\
<button type="button" class="copy secondary" data-copy="${id}-sample" hidden>Copy</button></div>\
<pre class="code"><code id="${id}-sample">${sample.code}</code></pre></div>` : ''}`;
}

/** A part's `- head` lines, each with the lines under it (up to the next `- `). */
function bulletGroups(lines: readonly string[]): Array<{ head: string; lines: string[] }> {
  const all: Array<{ head: string; lines: string[] }> = [];
  for (const l of lines) {
    if (l.startsWith('- ')) all.push({ head: l.slice(2), lines: [] });
    else all.at(-1)?.lines.push(l);
  }
  return all;
}
