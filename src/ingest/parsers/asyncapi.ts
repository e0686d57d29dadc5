/**
 * AsyncAPI 2.x/3.x parser (docs/sources.md#what-ingestion-extracts): 2.x `publish`/`subscribe` and 3.x `send`/`receive`
 * operations become endpoints on their channel; documents are an `overview` and one `channel` each. Local `$ref`s use
 * the OpenAPI parser's bounded helpers.
 */
import { IngestError, parsedSource, type ParsedDocument, type ParsedEndpoint, type ParsedSource } from '../types.js';
import { clipText, deref, listLine, overviewHead, pointerToken, propertyLines, tagLines, typeLabel } from
  './openapi.js';
import { isObj, nonBlankString, type Obj } from './values.js';

/** Messages whose payload properties are listed in one channel document. */
const MAX_DETAILED_MESSAGES = 5;

interface ChannelOp { method: string; id: string | undefined; op: Obj }
type Message = { name: string; message: Obj };

/** Last path segment of a local reference, decoded (`#/channels/a~1b` → `a/b`). */
const refKey = (ref: string): string => pointerToken(ref.slice(ref.lastIndexOf('/') + 1));

/** Messages of a 2.x operation (`message`, possibly `{oneOf: […]}`) or 3.x channel/operation (map or array). */
function messageList(root: Obj, raw: unknown): Message[] {
  const out: Message[] = [];
  const add = (name: string | undefined, value: unknown): void => {
    const m = deref(root, value);
    if (m === undefined) return;
    if (Array.isArray(m.oneOf)) {
      for (const sub of m.oneOf) add(undefined, sub);
      return;
    }
    const fromRef = isObj(value) && typeof value.$ref === 'string' ? refKey(value.$ref) : undefined;
    out.push({ name: nonBlankString(m.name) ?? nonBlankString(m.title) ?? name ?? fromRef ?? 'message', message: m });
  };
  if (Array.isArray(raw)) for (const v of raw) add(undefined, v);
  else if (isObj(raw) && raw.$ref === undefined && raw.payload === undefined && raw.oneOf === undefined) {
    for (const [name, v] of Object.entries(raw)) add(name, v);
  } else if (raw !== undefined) add(undefined, raw);
  return out;
}

/** Lines listing messages with their payload types (and, for the first few, payload properties). */
function messageLines(root: Obj, messages: Message[]): string[] {
  if (messages.length === 0) return [];
  const lines = ['', 'Messages:'];
  const seen = new Set<Obj>();
  for (const { name, message } of messages) {
    if (seen.has(message)) continue;
    seen.add(message);
    const summary = listLine(message.summary ?? message.description);
    const payload = message.payload;
    lines.push(`- ${name}${summary ? `: ${summary}` : ''}${payload !== undefined ? ` — payload: ${
      typeLabel(payload)}` : ''}`);
    if (payload !== undefined && seen.size <= MAX_DETAILED_MESSAGES) lines.push(
      ...propertyLines(root, payload, '    '));
  }
  return lines;
}

function channelDocument(root: Obj, name: string, channel: Obj, ops: ChannelOp[], messages: Message[]): ParsedDocument {
  const lines = [`Channel ${name}`];
  if (typeof channel.address === 'string' && channel.address !== name) lines.push(`Address: ${channel.address}`);
  if (nonBlankString(channel.title) !== undefined) lines.push(String(channel.title));
  if (nonBlankString(channel.summary) !== undefined) lines.push(String(channel.summary).trim());
  if (nonBlankString(channel.description) !== undefined) lines.push('', String(channel.description).trim());
  if (isObj(channel.parameters)) {
    lines.push('', 'Parameters:');
    for (const [pname, raw] of Object.entries(channel.parameters)) {
      const p = deref(root, raw) ?? {};
      const desc = listLine(p.description);
      lines.push(`- ${pname}${p.schema !== undefined ? ` (${typeLabel(p.schema)})` : ''}${desc ? `: ${desc}` : ''}`);
    }
  }
  if (ops.length > 0) {
    lines.push('', 'Operations:');
    for (const { method, id, op } of ops) {
      const summary = listLine(op.summary ?? op.title);
      const desc = listLine(op.description);
      lines.push(`- ${method}${id ? ` (${id})` : ''}${summary ? `: ${summary}` : ''}${desc && desc !== summary ? ` — ${
        desc}` : ''}`);
    }
  }
  lines.push(...messageLines(root, messages));
  return { kind: 'channel', title: name, text: clipText(lines.join('\n')) };
}

function overviewDocument(doc: Obj, title: string, version: string): ParsedDocument {
  const info = isObj(doc.info) ? doc.info : {};
  const lines = overviewHead(info, title, `AsyncAPI ${version}`);
  if (isObj(doc.servers)) {
    lines.push('', 'Servers:');
    for (const [name, raw] of Object.entries(doc.servers)) {
      const s = deref(doc, raw) ?? {};
      const where = nonBlankString(s.url) ?? `${String(s.host ?? '')}${String(s.pathname ?? '')}`;
      const desc = listLine(s.description);
      lines.push(`- ${name}: ${where}${s.protocol !== undefined ? ` (${String(s.protocol)})` : ''}${desc ? ` — ${
        desc}` : ''}`);
    }
  }
  lines.push(...tagLines(Array.isArray(info.tags) ? info.tags : doc.tags));
  return { kind: 'overview', title, text: clipText(lines.join('\n')) };
}

/**
 * Endpoints and documents of a parsed AsyncAPI 2.x or 3.x document (docs/sources.md#what-ingestion-extracts):
 * `overview`, then one `channel` document per channel.
 * @throws IngestError `AsyncAPI: …` when `doc` is not an object or its `asyncapi` version is missing or not 2.x/3.x.
 */
export function parseAsyncApi(doc: unknown): ParsedSource {
  if (!isObj(doc)) throw new IngestError('AsyncAPI: the document is not an object');
  if (doc.asyncapi === undefined) throw new IngestError(
    'AsyncAPI: not an AsyncAPI document (no "asyncapi" version field)');
  const version = String(doc.asyncapi);
  const major = /^([23])(\.|$)/.exec(version)?.[1];
  if (major === undefined) throw new IngestError(`AsyncAPI: unsupported version "${version}" (expected 2.x or 3.x)`);
  const info = isObj(doc.info) ? doc.info : {};
  const title = nonBlankString(info.title)?.trim();
  const channels = isObj(doc.channels) ? doc.channels : {};
  const documents: ParsedDocument[] = [overviewDocument(doc, title ?? 'AsyncAPI', version)];
  const endpoints: ParsedEndpoint[] = [];
  const channelIndex = new Map<string, number>();
  Object.keys(channels).forEach((name, i) => channelIndex.set(name, i + 1));

  if (major === '2') {
    for (const [name, raw] of Object.entries(channels)) {
      const channel = deref(doc, raw) ?? {};
      const ops: ChannelOp[] = [];
      const messages: Message[] = [];
      for (const kind of ['publish', 'subscribe'] as const) {
        const op = deref(doc, channel[kind]);
        if (op === undefined) continue;
        const method = kind.toUpperCase();
        ops.push({ method, id: nonBlankString(op.operationId), op });
        messages.push(...messageList(doc, op.message));
        endpoints.push({ method, path: name, documentIndex: channelIndex.get(name) });
      }
      documents.push(channelDocument(doc, name, channel, ops, messages));
    }
  } else {
    const opsByChannel = new Map<string, ChannelOp[]>();
    const operations = isObj(doc.operations) ? doc.operations : {};
    for (const [id, raw] of Object.entries(operations)) {
      const op = deref(doc, raw);
      if (op === undefined || (op.action !== 'send' && op.action !== 'receive')) continue;
      const method = op.action.toUpperCase();
      const ref = isObj(op.channel) && typeof op.channel.$ref === 'string' ? op.channel.$ref : undefined;
      const key = ref !== undefined ? refKey(ref) : undefined;
      const channel = deref(doc, op.channel);
      const path = (channel !== undefined ? nonBlankString(channel.address) : undefined) ?? key ?? id;
      const top = ref !== undefined && ref.startsWith('#/channels/') && key !== undefined &&
        channelIndex.has(key) ? key : undefined;
      endpoints.push({ method, path, documentIndex: top !== undefined ? channelIndex.get(top) : undefined });
      if (top !== undefined) {
        const list = opsByChannel.get(top) ?? [];
        list.push({ method, id, op });
        opsByChannel.set(top, list);
      }
    }
    for (const [name, raw] of Object.entries(channels)) {
      const channel = deref(doc, raw) ?? {};
      documents.push(channelDocument(doc, name, channel, opsByChannel.get(name) ?? [],
        messageList(doc, channel.messages)));
    }
  }
  for (const e of endpoints) if (e.documentIndex === undefined) delete e.documentIndex;
  return parsedSource(documents, endpoints, title);
}
