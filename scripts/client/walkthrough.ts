/**
 * A walk-through of the API written against the types openapi-typescript generates from the
 * server's OpenAPI document: create a conversation, add a message, open an issue from it,
 * create a source from pasted content, search. `scripts/client-typecheck.mjs` generates
 * `./api.ts` next to a copy of this file, type-checks both with the project's tsc, and runs
 * the result against a server (BASE_URL, API_KEY). Not part of the project's own build; the
 * same walk-through against the project's own generated client is walkthrough-generated.ts.
 *
 * The client is a dozen lines of typed `fetch` over the generated `paths`: path parameters,
 * query, body and the success body all come from the document, as they would with
 * openapi-fetch. The `@ts-expect-error` lines at the end are mistakes the types must catch.
 */
import type { components, paths } from './api.js';

type Schemas = components['schemas'];
type Method = 'get' | 'post' | 'patch' | 'delete';
/** The methods `P` has (openapi-typescript declares the others as `?: never`). */
type MethodOf<P extends keyof paths> = { [M in Method]: paths[P][M] extends undefined ? never : M }[Method];
type Op<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
type Json<R> = R extends { content: { 'application/json': infer B } } ? B : never;
/** The body of the operation's 200 or 201 answer. */
type Success<O> = O extends { responses: infer R } ? { [S in keyof R & (200 | 201)]: Json<R[S]> }[keyof R & (200 | 201)] : never;
type PathInit<O> = O extends { parameters: { path: infer P } } ? { path: P } : { path?: undefined };
type QueryInit<O> = O extends { parameters: { query: infer Q } } ? { query: Q }
  : O extends { parameters: { query?: infer Q } } ? { query?: Q } : { query?: undefined };
type BodyInit<O> = O extends { requestBody: { content: { 'application/json': infer B } } } ? { body: B }
  : O extends { requestBody?: { content: { 'application/json': infer B } } } ? { body?: B } : { body?: undefined };
type Init<O> = PathInit<O> & QueryInit<O> & BodyInit<O>;

/** A non-2xx answer: its status and `{code, error}` body. */
class ApiError extends Error {
  constructor(readonly status: number, readonly body: Schemas['ErrorResponse']) { super(`${status} ${body.code}: ${body.error}`); }
}

const BASE = process.env.BASE_URL ?? 'http://127.0.0.1:3000';
const KEY = process.env.API_KEY ?? '';

/** Calls `method` `path`; resolves to the success body, rejects with {@link ApiError}. */
async function call<P extends keyof paths, M extends MethodOf<P>>(method: M, path: P, init: Init<Op<P, M>>): Promise<Success<Op<P, M>>> {
  const { path: params, query, body } = init as { path?: Record<string, string>; query?: Record<string, string | number | boolean>; body?: unknown };
  const url = new URL(String(path).replace(/\{(\w+)\}/g, (_m, k: string) => encodeURIComponent(params?.[k] ?? '')), BASE);
  for (const [k, v] of Object.entries(query ?? {})) url.searchParams.set(k, String(v));
  const res = await fetch(url, {
    method: method.toUpperCase(),
    headers: { Authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json: unknown = await res.json();
  if (!res.ok) throw new ApiError(res.status, json as Schemas['ErrorResponse']);
  return json as Success<Op<P, M>>;
}

const PETSTORE = JSON.stringify({
  openapi: '3.0.3', info: { title: 'Petstore', version: '1' }, servers: [{ url: 'https://petstore.example.com/v1' }],
  paths: {
    '/pets': {
      get: { operationId: 'listPets', summary: 'List all pets', responses: { 200: { description: 'A page of pets' } } },
      post: { operationId: 'createPet', summary: 'Create a pet', responses: { 201: { description: 'The pet' } } },
    },
  },
});

async function main(): Promise<void> {
  const { conversation } = await call('post', '/api/v1/conversations', {
    body: { subject: 'Login fails after password reset', customer: { email: 'ada@example.com', name: 'Ada Lovelace', company: 'Acme' }, priority: 'high' },
  });
  const status: Schemas['ConversationStatus'] = conversation.status;

  const { message } = await call('post', '/api/v1/conversations/{conversationId}/messages', {
    path: { conversationId: conversation.id }, body: { role: 'user', body: 'I cannot log in since I reset my password.' },
  });
  const { conversation: after } = await call('get', '/api/v1/conversations/{conversationId}', { path: { conversationId: conversation.id } });
  const lastMessageAt: string | undefined = after.lastMessageAt;

  const { issue } = await call('post', '/api/v1/issues', { body: { subject: 'SSO login broken', conversationId: conversation.id, tags: ['sso'] } });
  const source: Schemas['IssueSource'] = issue.source;

  const created: Schemas['IngestionResult'] = await call('post', '/api/v1/sources', { body: { name: 'Petstore', content: PETSTORE } });
  const endpoints: Schemas['SourceEndpoint'][] = created.endpoints;

  const found = await call('get', '/api/v1/sources/search', { query: { q: 'pets', limit: 5 } });
  const scores: number[] = found.results.map((r) => r.score);

  const tags = await call('get', '/api/v1/tags', { query: { limit: 10 } });
  const names: string[] = tags.tags.map((t: Schemas['Tag']) => t.name);

  try {
    await call('get', '/api/v1/issues/{issueId}', { path: { issueId: 'no-such-issue' } });
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    const code: Schemas['ErrorResponse']['code'] = e.body.code;
    console.log(`conversation ${conversation.id} (${status}, last message ${lastMessageAt}), message ${message.id}`);
    console.log(`issue #${issue.number} from conversation ${source.conversationId}, tags ${names.join(', ')}`);
    console.log(`source ${created.source.id} ${created.source.status} with ${endpoints.map((x) => `${x.method} ${x.path}`).join(', ')}`);
    console.log(`search "pets": ${scores.length} results, best score ${scores[0]?.toFixed(3)}; an unknown issue → ${e.status} ${code}`);
  }
}

/** Mistakes the generated types reject; never called. */
export function mistakes(id: string): void {
  // @ts-expect-error a source needs `url` or `content`
  void call('post', '/api/v1/sources', { body: { name: 'nothing to ingest' } });
  // @ts-expect-error `closed` is not a conversation status
  void call('patch', '/api/v1/conversations/{conversationId}', { path: { conversationId: id }, body: { status: 'closed' } });
  // @ts-expect-error search needs `q`
  void call('get', '/api/v1/sources/search', { query: { limit: 5 } });
  // @ts-expect-error adding a message needs the conversation's id in the path
  void call('post', '/api/v1/conversations/{conversationId}/messages', { body: { role: 'user', body: 'hello' } });
  // @ts-expect-error `role` is `user` or `agent`
  void call('post', '/api/v1/conversations/{conversationId}/messages', { path: { conversationId: id }, body: { role: 'bot', body: 'hello' } });
  // @ts-expect-error request bodies allow no other properties
  void call('post', '/api/v1/issues', { body: { subject: 'x', assignee: 'me' } });
  // @ts-expect-error there is no PUT on a conversation
  void call('put', '/api/v1/conversations/{conversationId}', { path: { conversationId: id } });
}

await main();
