/**
 * The README walk-through written against the client that scripts/generate-client.mjs
 * generates from the server's OpenAPI document (docs/api.md#generating-a-client): create a
 * conversation, add messages (one retried with an Idempotency-Key), list them, open an issue
 * from the conversation, create a source from pasted OpenAPI content, search it, and meet
 * errors both ways (a narrowed result, and `unwrap` throwing ApiError).
 *
 * It imports `./client.js`: generate `client.ts` next to a copy of this file, then
 *   BASE_URL=http://127.0.0.1:3000 API_KEY=svck_… node --import tsx walkthrough-generated.ts
 * test/client-generated.test.ts does that against a server on port 0, after type-checking
 * both files with the project's TypeScript (strict). The `@ts-expect-error` lines in
 * `mistakes` are calls the generated types must refuse; the test also checks that each of them
 * is an error once its directive is removed. Each step checks what the server answered and
 * throws when it is not what the README says, so a completed run means the walk-through holds.
 */
import { ApiError, createClient, unwrap, type ApiClient, type ConversationStatus, type ErrorResponse, type IngestionResult, type Message, type SearchResult } from './client.js';

/** Throws `message` unless `ok`. */
function check(ok: boolean, message: string): asserts ok {
  if (!ok) throw new Error(`walk-through: ${message}`);
}

const PETSTORE = JSON.stringify({
  openapi: '3.0.3', info: { title: 'Petstore', version: '1' }, servers: [{ url: 'https://petstore.example.com/v1' }],
  paths: {
    '/pets': {
      get: { operationId: 'listPets', summary: 'List all pets', responses: { 200: { description: 'A page of pets' } } },
      post: { operationId: 'createPet', summary: 'Create a pet', responses: { 201: { description: 'The pet' } } },
    },
    '/pets/{petId}': { delete: { operationId: 'deletePet', summary: 'Delete a pet', responses: { 204: { description: 'Deleted' } } } },
  },
});

/** The walk-through; returns the lines it reports. */
export async function walkthrough(api: ApiClient): Promise<string[]> {
  // Create a conversation: `unwrap` gives the 201 body, typed ConversationResponse.
  const { conversation } = await unwrap(api.createConversation({
    body: { subject: 'Login fails', customer: { email: 'ada@example.com', name: 'Ada', company: 'Acme' }, priority: 'high' },
  }));
  const opened: ConversationStatus = conversation.status;
  check(opened === 'open' && conversation.channel === 'api', `a new conversation is open on channel api, not ${opened}/${conversation.channel}`);

  // The customer writes; the result is narrowed by `ok` instead of unwrapped. Sent twice with
  // the same Idempotency-Key, the second answer is the stored one.
  const idempotencyKey = `walkthrough-${conversation.id}`;
  const send = () => api.addMessage({
    path: { conversationId: conversation.id },
    headers: { 'Idempotency-Key': idempotencyKey },
    body: { role: 'user', body: 'I cannot log in since yesterday.' },
  });
  const first = await send();
  if (!first.ok) throw new Error(`addMessage answered ${first.status} ${first.data.code}: ${first.data.error}`);
  const message: Message = first.data.message;
  const again = await send();
  check(again.status === 201 && again.data.message.id === message.id && again.headers.get('idempotent-replayed') === 'true', 'a retried POST answers the stored message');

  // An agent answers: the conversation becomes "waiting".
  await unwrap(api.addMessage({ path: { conversationId: conversation.id }, body: { role: 'agent', body: 'Thanks Ada, we are looking into it.' } }));
  const { conversation: now } = await unwrap(api.retrieveConversation({ path: { conversationId: conversation.id } }));
  check(now.status === 'waiting', `after the agent's reply the conversation is waiting, not ${now.status}`);

  // List the messages, oldest first.
  const page = await unwrap(api.listMessages({ path: { conversationId: conversation.id }, query: { limit: 10 } }));
  check(page.messages.map((m) => m.role).join(',') === 'user,agent' && !page.hasMore, `two messages, user then agent: ${page.messages.map((m) => m.role)}`);

  // Solve it, then open an issue from it and read it back.
  const { conversation: solved } = await unwrap(api.updateConversation({ path: { conversationId: conversation.id }, body: { status: 'solved' } }));
  check(solved.status === 'solved' && typeof solved.closedAt === 'string', 'solving sets closedAt');
  const { issue } = await unwrap(api.createIssue({ body: { subject: 'SSO login broken', conversationId: conversation.id, tags: ['sso'], priority: 'high' } }));
  const { issue: readBack } = await unwrap(api.retrieveIssue({ path: { issueId: issue.id } }));
  check(readBack.source.conversationId === conversation.id && readBack.tags.includes('sso'), 'the issue keeps its conversation and tags');

  // A source from pasted OpenAPI content, then a search over it.
  const created: IngestionResult = await unwrap(api.createSource({ body: { name: 'Petstore', content: PETSTORE } }));
  check(created.source.type === 'openapi' && created.source.status === 'ready', `the pasted document is a ready openapi source, not ${created.source.type}/${created.source.status}`);
  check(created.endpoints.length === 3, `three endpoints, not ${created.endpoints.length}`);
  const found = await unwrap(api.searchSources({ query: { q: 'delete pet', limit: 3 } }));
  const best: SearchResult | undefined = found.results[0];
  check(best !== undefined && best.sourceId === created.source.id, 'the search finds the petstore source');

  // Errors. A narrowed result: the 404's data is the ErrorResponse.
  const missing = await api.retrieveIssue({ path: { issueId: 'no-such-issue' } });
  if (missing.ok) throw new Error('an unknown issue was found');
  const code: ErrorResponse['code'] = missing.data.code;
  check(missing.status === 404 && code === 'not_found', `an unknown issue → 404 not_found, not ${missing.status} ${code}`);
  // And unwrap's ApiError: the types accept any string for `q`, the server wants 1–500 characters.
  const refused = await unwrap(api.searchSources({ query: { q: '' } })).then(() => undefined, (e: unknown) => e);
  check(refused instanceof ApiError && refused.status === 400 && refused.data.code === 'invalid_request', `an empty query → ApiError 400 invalid_request, not ${String(refused)}`);

  return [
    `conversation ${conversation.id}: ${opened} → ${now.status} → ${solved.status}; message ${message.id} replayed`,
    `messages: ${page.messages.length}; issue #${issue.number} from conversation ${issue.source.conversationId}`,
    `source ${created.source.id} ${created.source.status}: ${created.endpoints.map((e) => `${e.method} ${e.path}`).join(', ')}`,
    `search "delete pet": ${found.results.length} results; unknown issue → ${missing.status} ${code}; empty query → ${refused.status} ${refused.data.code}`,
  ];
}

/** Calls the generated types refuse. Never called: it only has to type-check. */
export async function mistakes(api: ApiClient, id: string): Promise<void> {
  const customer = { email: 'ada@example.com' };
  // @ts-expect-error wrong field name: `priorty` is no property of CreateConversationRequest
  await api.createConversation({ body: { subject: 'x', customer, priorty: 'high' } });
  // @ts-expect-error missing required field: a message needs its `body`
  await api.addMessage({ path: { conversationId: id }, body: { role: 'user' } });
  // @ts-expect-error missing required field: a source needs `url` or `content`
  await api.createSource({ body: { name: 'nothing to ingest' } });
  // @ts-expect-error wrong enum value: `closed` is not a conversation status
  await api.updateConversation({ path: { conversationId: id }, body: { status: 'closed' } });
  // @ts-expect-error wrong enum value: a message's role is `user` or `agent`
  await api.addMessage({ path: { conversationId: id }, body: { role: 'bot', body: 'hello' } });
  // @ts-expect-error wrong parameter type: `limit` is a number
  await api.searchSources({ query: { q: 'pets', limit: '5' } });
  // @ts-expect-error missing required parameter: search needs `q`
  await api.searchSources({ query: { limit: 5 } });
  // @ts-expect-error missing path parameter
  await api.retrieveConversation({ path: {} });
  // @ts-expect-error wrong header value: the API version is pinned
  await api.listTags({ headers: { 'Api-Version': '2024-01-01' } });
  // @ts-expect-error no such operation
  await api.deleteConversation({ path: { conversationId: id } });
  const result = await api.retrieveIssue({ path: { issueId: id } });
  // @ts-expect-error the body is an ErrorResponse until `ok` or `status` says otherwise
  void result.data.issue;
  if (result.status === 200) {
    // @ts-expect-error the issue's number is a number
    const n: string = result.data.issue.number;
    void n;
  }
}

const api = createClient({ baseUrl: process.env.BASE_URL ?? 'http://127.0.0.1:3000', apiKey: process.env.API_KEY ?? '' });
for (const line of await walkthrough(api)) console.log(line);
