/**
 * Webhook subscriptions and scopes (docs/api.md#webhooks): a key may subscribe an endpoint only to event
 * types whose read scope it holds, so `webhooks:write` alone cannot receive conversations through a webhook.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from './helpers/server.js';

const HOOKS = '/api/v1/webhook-endpoints';
const refused = (detail: string) => ({ code: 'insufficient_scope',
  error: `This API key is missing the required scope: ${detail}.` });

test('webhooks:write alone cannot subscribe to *, conversations or issues → 403; with the read scope it can', async () => {
  const srv = await startTestServer({ env: { RATE_LIMIT_BURST: '100000', WEBHOOK_ALLOW_PRIVATE: 'true' } });
  try {
    const hooksOnly = await srv.newKey({ scopes: 'webhooks:write' });
    const url = 'http://127.0.0.1:9/hooks';
    const reads = await srv.call('GET', '/api/v1/conversations', { key: hooksOnly });
    assert.equal(reads.status, 403);
    for (const [events, detail] of [
      [['*'], 'subscribing to * needs conversations:read'],
      [['conversation.created'], 'subscribing to conversation.created needs conversations:read'],
      [['message.created'], 'subscribing to message.created needs conversations:read'],
      [['issue.updated'], 'subscribing to issue.updated needs issues:read'],
      [['source.deleted'], 'subscribing to source.deleted needs sources:read'],
    ] as const) {
      const r = await srv.call('POST', HOOKS, { key: hooksOnly, body: { url, events } });
      assert.equal(r.status, 403, JSON.stringify(events));
      assert.deepEqual(r.body, refused(detail));
    }
    const list = await srv.call<{ webhookEndpoints: unknown[] }>('GET', HOOKS);
    assert.deepEqual(list.body.webhookEndpoints, [], 'nothing was created');

    const withIssues = await srv.newKey({ scopes: 'webhooks:write,issues:read' });
    const made = await srv.call<{ webhookEndpoint: { id: string } }>('POST', HOOKS,
      { key: withIssues, body: { url, events: ['issue.created'] } });
    assert.equal(made.status, 201, made.text);
    const widen = await srv.call('PATCH', `${HOOKS}/${made.body.webhookEndpoint.id}`,
      { key: withIssues, body: { events: ['issue.created', 'conversation.updated'] } });
    assert.equal(widen.status, 403);
    assert.deepEqual(widen.body, refused('subscribing to conversation.updated needs conversations:read'));
    const all = await srv.call('POST', HOOKS, { body: { url, events: ['*'] } });
    assert.equal(all.status, 201, 'a full-access key keeps *');
  } finally { await srv.close(); }
});
