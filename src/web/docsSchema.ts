/**
 * Schemas on a docs page (docs/web.md#operations): the property lines ingestion writes
 * (`- name (type, required): description`, nested by indentation) read back into a tree, named
 * types expanded from the source's schema documents (each name at most once on a path, so a
 * `$ref` cycle shows once), a deterministic example generated from a tree, and the tree as HTML.
 */
import { html, type Html } from './html.js';
import { markdown } from './markdown.js';

/** One property: its type label as ingestion wrote it, whether required, its description, its properties. */
export interface Prop { name: string; type: string; required: boolean; description: string; children: Prop[];
  /** Set when the type names a schema already expanded above it on the same path. */
  circular?: boolean }

/** A named schema of the source: its type label, description and properties. */
export interface NamedSchema { type: string; description: string; props: Prop[] }

/** Most properties shown in one tree after expansion; deeper or further ones are left out (said so). */
const MAX_NODES = 150;
/** Deepest nesting shown. */
const MAX_DEPTH = 6;

/** `- name (type label, required): description` → its three parts (parentheses in the label balanced), or null. */
export function propLine(line: string): { name: string; label: string; description: string } | null {
  if (!line.startsWith('- ')) return null;
  const sp = line.indexOf(' (', 2);
  if (sp === -1) return null;
  let depth = 0;
  let end = -1;
  for (let i = sp + 1; i < line.length; i++) {
    if (line[i] === '(') depth++;
    else if (line[i] === ')' && --depth === 0) { end = i; break; }
  }
  if (end === -1) return null;
  const rest = line.slice(end + 1);
  if (rest !== '' && !rest.startsWith(':')) return null;
  return { name: line.slice(2, sp), label: line.slice(sp + 2, end), description: rest.slice(1).trim() };
}

/**
 * The tree of property lines (any indentation, two spaces a level): `- id (integer, required): The id.`
 * Lines that are not property lines end the list. O(lines).
 */
export function parseProps(lines: readonly string[]): Prop[] {
  const root: Prop[] = [];
  const stack: Array<{ indent: number; list: Prop[] }> = [{ indent: -1, list: root }];
  for (const line of lines) {
    const indent = line.length - line.trimStart().length;
    const m = propLine(line.trim());
    if (!m) continue;
    const required = m.label.endsWith(', required');
    const prop: Prop = { name: m.name, type: required ? m.label.slice(0, -10) : m.label, required,
      description: m.description, children: [] };
    while (stack.length > 1 && stack[stack.length - 1].indent >= indent) stack.pop();
    stack[stack.length - 1].list.push(prop);
    stack.push({ indent, list: prop.children });
  }
  return root;
}

/** The schema name a type label refers to (`array of Pet | null` → `Pet`), when `schemas` has it. */
export function namedIn(type: string, schemas: ReadonlyMap<string, NamedSchema>): string | undefined {
  let t = type.replace(/ \| null$/, '');
  while (t.startsWith('array of ')) t = t.slice(9);
  return schemas.has(t) ? t : undefined;
}

/**
 * `props` with each property whose type names a schema of `schemas` given that schema's properties,
 * recursively; a name already being expanded on the path is marked circular instead. At most
 * {@link MAX_NODES} properties and {@link MAX_DEPTH} levels.
 */
export function expand(props: readonly Prop[], schemas: ReadonlyMap<string, NamedSchema>, path = new Set<string>()):
  Prop[] {
  const budget = { left: MAX_NODES };
  const walk = (list: readonly Prop[], depth: number): Prop[] => {
    const out: Prop[] = [];
    for (const p of list) {
      if (budget.left-- <= 0) break;
      const name = namedIn(p.type, schemas);
      const named = name ? schemas.get(name) : undefined;
      let children = p.children;
      let circular = false;
      let type = p.type;
      if (named && !children.length) {
        if (path.has(name!)) circular = true;
        else if (depth < MAX_DEPTH) {
          path.add(name!);
          children = walk(named.props, depth + 1);
          path.delete(name!);
        }
        if (!named.props.length && named.type && named.type !== name) type = `${p.type}: ${named.type}`;
      } else if (children.length && depth < MAX_DEPTH) children = walk(children, depth + 1);
      out.push({ ...p, type, children: depth < MAX_DEPTH ? children : [], circular,
        description: p.description || named?.description.split('\n')[0] || '' });
    }
    return out;
  };
  return walk(props, 0);
}

/** An example value for a type label: enum → its first value; formats → a sample; else a placeholder. */
function leafExample(type: string): unknown {
  const en = /enum: (.*)$/.exec(type);
  if (en) {
    const first = en[1].split(', ')[0];
    try { return JSON.parse(first); } catch { return first; }
  }
  const t = type.toLowerCase();
  if (t.includes('date-time')) return '2024-01-01T12:00:00Z';
  if (t.includes('(date)')) return '2024-01-01';
  if (t.includes('email')) return 'user@example.com';
  if (t.includes('uuid')) return '3fa85f64-5717-4562-b3fc-2c963f66afa6';
  if (t.includes('uri') || t.includes('url')) return 'https://example.com';
  if (/^(integer|int|int32|int64|uint32|uint64|long)\b/.test(t)) return 0;
  if (/^(number|float|double)\b/.test(t)) return 0.5;
  if (/^(boolean|bool)\b/.test(t)) return true;
  if (t.startsWith('string') || t === 'id' || t === 'id!') return 'string';
  return null;
}

/** A deterministic example object of an (expanded) tree: each property once, arrays of one element. */
export function exampleOf(props: readonly Prop[], schemas: ReadonlyMap<string, NamedSchema>): unknown {
  const out: Record<string, unknown> = {};
  for (const p of props) {
    const arrays = (p.type.match(/array of /g) ?? []).length;
    let v: unknown;
    if (p.children.length) v = exampleOf(p.children, schemas);
    else if (p.circular) v = {};
    else {
      const name = namedIn(p.type, schemas);
      const named = name ? schemas.get(name) : undefined;
      v = leafExample(named && !named.props.length ? named.type : p.type.replace(/^(array of )+/, ''));
    }
    for (let k = 0; k < arrays; k++) v = [v];
    out[p.name] = v;
  }
  return out;
}

/** A tree as nested lists: name, type, `required`, enum/format (in the type label), description (Markdown). */
export function schemaTree(props: readonly Prop[]): Html {
  if (!props.length) return html``;
  return html`<ul class="schema">${props.map((p) => html`<li><div class="prop">\
<code class="prop-name">${p.name}</code> \
<span class="prop-type">${p.type}</span>${p.required ? html` <span class="req">required</span>` : ''}${
  p.circular ? html` <span class="hint">(circular: shown above)</span>` : ''}</div>${
  p.description ? html`<div class="prop-desc">${markdown(p.description)}</div>` : ''}${
  schemaTree(p.children)}</li>`)}</ul>`;
}

/**
 * The named schemas of an OpenAPI source's `schema` documents (`Schema Pet`, `Type: …`, `Properties:`),
 * gRPC `message` documents (`- int32 id = 1 — …`) and GraphQL `type` documents (`- id: ID! — …`).
 */
export function namedSchema(kind: string | null, text: string): NamedSchema {
  const lines = text.split('\n');
  const typeLine = lines.find((l) => l.startsWith('Type: '));
  const at = lines.findIndex((l) => l === 'Properties:' || l === 'Fields:' || l.startsWith('Values:'));
  const description = lines.slice(1, at === -1 ? undefined : at).filter((l) => !l.startsWith('Type: '))
    .join('\n').trim();
  const body = at === -1 ? [] : lines.slice(at + 1);
  let props: Prop[];
  if (kind === 'message') props = body.map(protoField).filter((p): p is Prop => p !== null);
  else if (kind === 'type') props = body.map(graphqlField).filter((p): p is Prop => p !== null);
  else props = parseProps(body);
  return { type: typeLine ? typeLine.slice(6) : kind === 'message' || kind === 'type' ? 'object' : '', description,
    props };
}

/** `- repeated Point points = 2 — desc` → a property. */
function protoField(line: string): Prop | null {
  const m = /^- (?:(repeated|optional) )?(\S+) (\S+) = \d+(?: — (.*))?$/.exec(line);
  if (!m) return null;
  return { name: m[3], type: m[1] === 'repeated' ? `array of ${m[2]}` : m[2], required: false,
    description: m[4] ?? '', children: [] };
}

/** `- name: [Type]! — desc` (no arguments) → a property. */
function graphqlField(line: string): Prop | null {
  const m = /^- ([A-Za-z_]\w*)(?:\([^)]*\))?: (\S+)(?: — (.*))?$/.exec(line);
  if (!m) return null;
  let t = m[2];
  const required = t.endsWith('!');
  if (required) t = t.slice(0, -1);
  let arrays = 0;
  while (t.startsWith('[')) { arrays++; t = t.slice(1).replace(/!?\]!?$/, ''); }
  return { name: m[1], type: `${'array of '.repeat(arrays)}${t}`, required, description: m[3] ?? '', children: [] };
}
