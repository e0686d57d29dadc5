/**
 * Agents' answers with a model (docs/configuration.md#agent-model): a local server speaking the chat-completions
 * protocol records every request; the prompt's passages are numbered, `[n]` marks become citations, a refusal or
 * a timeout is `uncertain`, and no stored credential, API key or webhook secret is ever in a prompt.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { startTestServer, type Space, type TestServer } from './helpers/server.js';

const PETSTORE = readFileSync(new URL('./fixtures/corpus/openapi/oai-v2.0-petstore.json', import.meta.url), 'utf8');
const LLM_KEY = 'sk-test-model-key-123456';
interface Recorded { url: string; auth: string | undefined; body: any }
const recorded: Recorded[] = [];
/** What the model answers next: text, a refusal, or nothing (the request hangs: a timeout). */
let next: { content?: string; refusal?: string; hang?: boolean } = {};
let llm: Server;
let srv: TestServer;

before(async () => {
  llm = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => { data += c; });
    req.on('end', () => {
      recorded.push({ url: req.url!, auth: req.headers.authorization, body: JSON.parse(data) });
      if (next.hang) return;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', choices: [{ index: 0, finish_reason: 'stop',
        message: { role: 'assistant', content: next.content ?? null, refusal: next.refusal ?? null } }] }));
    });
  });
  await new Promise<void>((r) => llm.listen(0, '127.0.0.1', r));
  const port = (llm.address() as { port: number }).port;
  srv = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000',
    AGENT_LLM_URL: `http://127.0.0.1:${port}/v1`, AGENT_LLM_API_KEY: LLM_KEY, AGENT_LLM_MODEL: 'test-model',
    AGENT_LLM_TIMEOUT_MS: '1000', WEBHOOK_ALLOW_PRIVATE: 'true' } });
});
after(async () => { await srv.close(); llm.closeAllConnections(); await new Promise((r) => llm.close(r)); });

const SOURCE_SECRET = 'pets-upstream-secret-98765';
/** Shaped like this service's tokens (shorter than real ones, which the test server forbids storing). */
const PASTED_KEY = 'svck_Zq81mXx0PastedKey';
const PASTED_HOOK = 'whsec_Qm2PastedSecretValue';
let w: Space;
let webhookSecret = '';
async function ask(question: string): Promise<any> {
  const c = await w.call<any>('POST', '/api/v1/conversations', { body: { subject: 'Q', customer: { email: 'c@example.com' } } });
  await w.call('POST', `/api/v1/conversations/${c.body.conversation.id}/messages`, { body: { role: 'user', body: question } });
  const r = await w.call<any>('POST', `/api/v1/conversations/${c.body.conversation.id}/answers`, { body: {} });
  assert.equal(r.status, 201, r.text);
  return r.body.answer;
}

test('setup: a source with a credential, a webhook with its secret, an agent with instructions', async () => {
  w = await srv.space();
  const s = await w.call<any>('POST', '/api/v1/sources', { body: { content: PETSTORE } });
  assert.equal(s.status, 201, s.text);
  const p = await w.call('PATCH', `/api/v1/sources/${s.body.source.id}`, { body: { auth: { type: 'bearer', secret: SOURCE_SECRET } } });
  assert.equal(p.status, 200, p.text);
  const h = await w.call<any>('POST', '/api/v1/webhook-endpoints', { body: { url: 'http://127.0.0.1:9/hook', events: ['answer.created'] } });
  assert.equal(h.status, 201, h.text);
  webhookSecret = h.body.webhookEndpoint.secret;
  const a = await w.call('POST', '/api/v1/agents', { body: { name: 'Pets', instructions: `Answer briefly. Never say ${PASTED_KEY}.` } });
  assert.equal(a.status, 201, a.text);
});

test('the model cites [2] → answered, that passage is the citation, model named; the request is the protocol\'s', async () => {
  recorded.length = 0;
  next = { content: 'Use the pets list [2].' };
  const ans = await ask('how do I list all pets? GET /pets/1 too');
  assert.equal(recorded.length, 1);
  const req = recorded[0];
  assert.equal(req.url, '/v1/chat/completions');
  assert.equal(req.auth, `Bearer ${LLM_KEY}`);
  assert.equal(req.body.model, 'test-model');
  assert.deepEqual(req.body.messages.map((m: any) => m.role), ['system', 'user']);
  assert.match(req.body.messages[0].content, /Instructions:\nAnswer briefly\. Never say \[redacted\]\./);
  assert.match(req.body.messages[1].content, /^Passages:\n\n\[1\] Info for a specific pet \(GET \/pets\/\{petId\}\)\n/);
  assert.match(req.body.messages[1].content, /\n\n\[2\] /);
  assert.match(req.body.messages[1].content, /Conversation:\nCustomer: how do I list all pets\? GET \/pets\/1 too\n/);
  assert.deepEqual([ans.outcome, ans.text, ans.model, ans.citations.length], ['answered', 'Use the pets list [2].', 'test-model', 1]);
  const second = req.body.messages[1].content.split('\n\n[2] ')[1].split('\n')[0];
  assert.ok(second.startsWith(ans.citations[0].title), `${second} / ${ans.citations[0].title}`);
});

test('no valid citation ([9] of 3 passages), a refusal, UNCERTAIN, a timeout → uncertain', async () => {
  for (const reply of [{ content: 'Pets are listed [9].' }, { content: 'Pets are great.' }, { refusal: 'I cannot help with that.' },
    { content: 'UNCERTAIN' }, { hang: true }]) {
    next = reply;
    const ans = await ask('how do I create a pet?');
    assert.equal(ans.outcome, 'uncertain', JSON.stringify(reply));
    assert.equal(ans.model, 'test-model');
  }
});

test('no prompt holds the source credential, the API key or the webhook secret; pasted tokens are redacted', async () => {
  next = { content: 'See [1].' };
  await ask(`my key is ${PASTED_KEY}, hook secret ${PASTED_HOOK}: GET /pets/3?`);
  assert.ok(recorded.length >= 7);
  for (const r of recorded) {
    const text = JSON.stringify(r.body);
    for (const secret of [SOURCE_SECRET, w.key, webhookSecret, PASTED_KEY, PASTED_HOOK]) {
      assert.ok(!text.includes(secret), `prompt holds ${secret.slice(0, 8)}…`);
    }
  }
  assert.match(JSON.stringify(recorded.at(-1)!.body), /my key is \[redacted\], hook secret \[redacted\]/);
});
