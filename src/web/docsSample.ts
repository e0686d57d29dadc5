/**
 * The request sample of an operation on a docs page (docs/web.md#operations): a `curl` command
 * (HTTP, GraphQL, SOAP) or a `grpcurl` one (gRPC) with the method, the server URL (the source's, else
 * `$BASE_URL`), the path with its parameters as `<name>`, the required query and header parameters,
 * an `Authorization` placeholder (`$API_TOKEN`, never a secret) and the example body. Deterministic.
 */
import type { OpInput, OpView } from './docsOperation.js';

/** `s` as one single-quoted shell word. */
const sq = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** The URL as a shell word: quoted as written when the server is known, else after `"$BASE_URL"`. */
function urlWord(server: string | null, path: string): string {
  return server ? sq(server.replace(/\/+$/, '') + path) : `"$BASE_URL"${sq(path)}`;
}

const AUTH = '-H "Authorization: Bearer $API_TOKEN"';

/** One JSON line of pretty JSON text (for `-d`). */
function compact(json: string): string {
  try { return JSON.stringify(JSON.parse(json)); } catch { return json; }
}

/** The sample of `op`, or null when its source type has none (AsyncAPI: its messages show their examples). */
export function sampleOf(op: OpInput, v: OpView, server: string | null): { label: string; code: string } | null {
  const m = op.method.toUpperCase();
  if (m === 'PUBLISH' || m === 'SUBSCRIBE' || m === 'SEND' || m === 'RECEIVE') return null;
  if (m === 'RPC') {
    const target = op.path.replace(/^\//, '');
    const body = v.body?.example ? ` -d ${sq(compact(v.body.example))}` : '';
    const host = server ? server.replace(/^[a-z]+:\/\//, '') : '$GRPC_HOST:443';
    return { label: 'grpcurl', code: `grpcurl -H "authorization: Bearer $API_TOKEN"${body} \\\n  ${host} ${target}` };
  }
  if (m === 'QUERY' || m === 'MUTATION' || m === 'SUBSCRIPTION') {
    const args = v.params.filter((p) => p.required).map((p) => `${p.name}: ${
      /^(Int|Float)!?$/.test(p.type) ? '0' : /^Boolean!?$/.test(p.type) ? 'true' : '"<value>"'}`);
    const leaves = (v.responses[0]?.props ?? []).filter((p) => !p.children.length && !p.circular).slice(0, 8)
      .map((p) => p.name);
    const sel = leaves.length ? ` { ${leaves.join(' ')} }` : (v.responses[0]?.props.length ? ' { __typename }' : '');
    const query = `${m.toLowerCase()} { ${op.path}${args.length ? `(${args.join(', ')})` : ''}${sel} }`;
    return { label: 'curl', code: `curl -X POST ${server ? sq(server) : '"$BASE_URL/graphql"'} \\\n  ${AUTH} \\\n` +
      `  -H 'Content-Type: application/json' \\\n  -d ${sq(JSON.stringify({ query }))}` };
  }
  if (m === 'SOAP') {
    const endpoint = v.facts.find(([k]) => k === 'Endpoint')?.[1] ?? null;
    const ns = /^Target namespace: (\S+)$/m.exec(op.text)?.[1] ?? 'urn:example';
    const el = /element (?:[\w.-]+:)?([\w.-]+)/.exec(v.body?.description ?? '')?.[1] ?? op.path;
    const envelope = `<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:tns="${ns}">` +
      `<soap:Body><tns:${el}/></soap:Body></soap:Envelope>`;
    return { label: 'curl', code: `curl -X POST ${endpoint ? sq(endpoint) : '"$BASE_URL"'} \\\n  ${AUTH} \\\n` +
      `  -H 'Content-Type: text/xml; charset=utf-8' \\\n  -H ${sq(`SOAPAction: "${op.path}"`)} \\\n` +
      `  -d ${sq(envelope)}` };
  }
  // HTTP (OpenAPI, Postman).
  let path = op.path.replace(/\{([^{}/]+)\}/g, '<$1>');
  const postmanUrl = op.kind === 'request' ? v.facts.find(([k]) => k === 'URL')?.[1] : undefined;
  const query = v.params.filter((p) => p.in === 'query' && (p.required || op.kind === 'request'))
    .map((p) => `${encodeURIComponent(p.name)}=<${p.name}>`);
  if (query.length && !postmanUrl) path += `?${query.join('&')}`;
  const lines = [`curl -X ${m} ${postmanUrl ? sq(postmanUrl) : urlWord(server, path)}`, AUTH];
  for (const p of v.params) {
    if (p.in === 'header' && (p.required || op.kind === 'request')) lines.push(`-H ${sq(`${p.name}: <${p.name}>`)}`);
  }
  const body = v.body;
  if (body?.example) {
    const json = body.media === '' || body.media.includes('json');
    lines.push(`-H ${sq(`Content-Type: ${body.media && body.media !== 'raw' ? body.media : 'application/json'}`)}`);
    lines.push(`-d ${sq(json ? compact(body.example) : body.example)}`);
  }
  return { label: 'curl', code: lines.join(' \\\n  ') };
}
