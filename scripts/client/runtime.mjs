// The hand-written part of the generated client (docs/api.md#generating-a-client): `ApiError`,
// `unwrap` and `createClient`, which sends each operation from a table of (method, path
// template, needs the key, documented statuses). Emitted as TypeScript text that compiles
// under `strict` with either the DOM library or @types/node (it uses only `fetch`, `URL`,
// `Headers`, `encodeURIComponent` and `JSON`).

/** Names the generated file declares at top level; a component schema may not take them. */
export const OWN_NAMES = ['ApiClient', 'ApiError', 'unwrap', 'createClient'];
/**
 * Global names the generated code refers to; a component schema named like one would shadow
 * it inside the file.
 */
export const GLOBALS_USED = ['Array', 'Error', 'Extract', 'Headers', 'JSON', 'Object', 'Promise', 'Record', 'String', 'TypeError', 'URL', 'encodeURIComponent', 'fetch'];

/**
 * The runtime text. `operations` are collectOperations()'s; `prefix` is the path of the
 * document's first relative server URL ('' for `/`); `errorType` the union of every non-2xx
 * body type, the type of `ApiError.data`.
 */
export function runtime(operations, prefix, errorType) {
  const table = operations.map((o) => `  ${o.id}: [${JSON.stringify(o.method)}, ${JSON.stringify(o.path)}, ${o.auth}, ${JSON.stringify(o.statuses)}],`).join('\n');
  return `
/** A non-2xx answer, thrown by {@link unwrap}: the status, the parsed body and the headers. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly data: ${errorType}, readonly headers: Headers) {
    super(\`HTTP \${status}: \${JSON.stringify(data) ?? ''}\`.slice(0, 500));
    this.name = 'ApiError';
  }
}

/**
 * The body of a 2xx result; for any other, throws {@link ApiError} carrying the body.
 * \`const { conversation } = await unwrap(api.createConversation({ body }))\`.
 */
export async function unwrap<R extends { ok: boolean; status: number; data: unknown; headers: Headers }>(
  result: R | Promise<R>,
): Promise<Extract<R, { ok: true }>['data']> {
  const r = await result;
  if (!r.ok) throw new ApiError(r.status, r.data as ${errorType}, r.headers);
  return r.data as Extract<R, { ok: true }>['data'];
}

type $Operation = readonly [method: string, path: string, auth: boolean, statuses: readonly string[]];
type $Init = { path?: Record<string, unknown>; query?: Record<string, unknown>; headers?: Record<string, unknown>; body?: unknown };
type $Result = { ok: boolean; status: number; data: unknown; headers: Headers };

const $OPERATIONS: Record<string, $Operation> = {
${table}
};

/** The response key \`status\` falls under, as OpenAPI picks it: its code, else its range (4XX), else default. */
function $responseKey(statuses: readonly string[], status: number): string | undefined {
  const code = String(status);
  return statuses.find((s) => s === code) ?? statuses.find((s) => s === \`\${code[0]}XX\`) ?? statuses.find((s) => s === 'default');
}

/**
 * A client of the API at \`baseUrl\` (e.g. \`http://127.0.0.1:3000\`), sending \`apiKey\` as a
 * bearer token to the operations that need one, through \`fetch\` (default: the global one).
 * Each method resolves to \`{ ok, status, data, headers }\` for every documented status: the body
 * is parsed as JSON when the answer says it is JSON (it is not validated). It rejects when the
 * request cannot be sent, a path parameter is missing, the answer is not valid JSON, or the
 * status is one the document does not list for the operation.
 */
export function createClient(opts: { baseUrl: string; apiKey: string; fetch?: typeof fetch }): ApiClient {
  const base = opts.baseUrl.replace(/\\/+$/, '') + ${JSON.stringify(prefix)};
  const send = async ([method, template, auth, statuses]: $Operation, init: $Init = {}): Promise<$Result> => {
    const path = template.replace(/\\{([^}]+)\\}/g, (_m, name: string) => {
      const value = init.path?.[name];
      if (value === undefined || value === null) throw new TypeError(\`\${method} \${template}: path parameter \${name} is missing\`);
      return encodeURIComponent(String(value));
    });
    const url = new URL(base + path);
    for (const [name, value] of Object.entries(init.query ?? {})) {
      for (const item of Array.isArray(value) ? value : [value]) if (item !== undefined && item !== null) url.searchParams.append(name, String(item));
    }
    const headers: Record<string, string> = { Accept: 'application/json' };
    for (const [name, value] of Object.entries(init.headers ?? {})) if (value !== undefined && value !== null) headers[name] = String(value);
    if (auth) headers.Authorization = \`Bearer \${opts.apiKey}\`;
    if (init.body !== undefined) headers['Content-Type'] = 'application/json';
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    const res = await (opts.fetch ?? fetch)(url, { method, headers, body });
    const text = await res.text();
    const json = /^application\\/(?:[\\w.-]+\\+)?json(?:;|$)/i.test(res.headers.get('content-type') ?? '');
    const data: unknown = text === '' ? undefined : json ? JSON.parse(text) : text;
    const key = $responseKey(statuses, res.status);
    if (key === undefined) throw new Error(\`\${method} \${template} answered \${res.status}, a status the document does not list for it\`);
    // \`ok\` as the types have it: the answer is documented as a 2xx (default counts as an error).
    return { ok: key[0] === '2', status: res.status, data, headers: res.headers };
  };
  const client: Record<string, (init?: $Init) => Promise<$Result>> = {};
  for (const [id, operation] of Object.entries($OPERATIONS)) client[id] = (init) => send(operation, init);
  return client as unknown as ApiClient;
}
`;
}
