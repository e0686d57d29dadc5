/**
 * GET /api/v1/custom-fields (docs/api.md#custom-fields): sanitized definitions in their defined order, paginated. Definitions come from import
 * (docs/configuration.md#import-file), which may carry internal settings that must never reach the API.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type CallOptions, type CallResult, type TestServer, type Space } from './helpers/server.js';
import { refusedWith } from './helpers/refusal.js';
import { walkList } from './helpers/lists.js';
import type { CustomFieldList } from './helpers/answers.js';

let srv: TestServer;
before(async () => { srv = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' } }); });
after(async () => { await srv.close(); });

/** A fresh workspace with a full-access key; `call` uses that key unless told otherwise. */
const space = () => srv.space();

const F = '/api/v1/custom-fields';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const invalid = (detail: string) => ({ code: 'invalid_request', error: `Request body is invalid: ${detail}.` });
const invalidQuery = (detail: string) => ({ code: 'invalid_request', error: `Query parameter ${detail}.` });
const SECRET = 'INTERNAL-AI-PROMPT-do-not-leak';

async function listAll(w: Space): Promise<any[]> {
  const r = await w.call<CustomFieldList>('GET', `${F}?limit=100`);
  assert.equal(r.status, 200, r.text);
  return r.body.customFields;
}

describe('GET /api/v1/custom-fields', () => {
  test('GET /custom-fields with no definitions → {object:"list", hasMore:false, nextCursor:null, customFields:[]}', async () => {
    const w = await space();
    const r = await w.call('GET', F);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { object: 'list', hasMore: false, nextCursor: null, customFields: [] });
  });

  test('GET /custom-fields → only the spec\'s fields, ordered by position; aiInstructions and position never returned', async () => {
    const w = await space();
    const res = await srv.admin.importData(w.workspaceId, {
      customFields: [
        { label: 'Plan', type: 'select', options: ['free', 'pro', 'enterprise'], fillMode: 'api', description: 'Billing plan', aiInstructions: SECRET, position: 2 },
        { label: 'Order number', type: 'number', enabled: false, position: 0 },
        { label: 'Sentiment', type: 'text', fillMode: 'ai', aiInstructions: `${SECRET} 2`, position: 1 },
      ],
    });
    assert.deepEqual(res.imported, { customFields: 3, tags: 0, agents: 0, conversations: 0, messages: 0, issues: 0 });
    const r = await w.call<CustomFieldList>('GET', F);
    assert.equal(r.status, 200);
    const [order, sentiment, plan] = r.body.customFields;
    for (const f of [order, sentiment, plan]) assert.match(f.id, UUID);
    assert.deepEqual(r.body, {
      object: 'list', hasMore: false, nextCursor: null,
      customFields: [
        { object: 'custom_field', id: order.id, label: 'Order number', type: 'number', enabled: false, fillMode: 'manual', description: '', options: [] },
        { object: 'custom_field', id: sentiment.id, label: 'Sentiment', type: 'text', enabled: true, fillMode: 'ai', description: '', options: [] },
        { object: 'custom_field', id: plan.id, label: 'Plan', type: 'select', enabled: true, fillMode: 'api', description: 'Billing plan', options: ['free', 'pro', 'enterprise'] },
      ],
    });
    assert.equal(r.text.includes(SECRET), false);
    assert.equal(r.text.includes('aiInstructions'), false);
    assert.equal(r.text.includes('position'), false);
    assert.equal(r.text.includes('createdAt'), false);
  });

  test('GET /custom-fields: equal positions keep import order; fields without a position go after all positioned ones', async () => {
    const w = await space();
    await srv.admin.importData(w.workspaceId, {
      customFields: [
        { label: 'B', type: 'text', position: 20 },
        { label: 'A1', type: 'text', position: 10 },
        { label: 'A2', type: 'text', position: 10 },
        { label: 'Unpositioned', type: 'date' },
      ],
    });
    assert.deepEqual((await listAll(w)).map((f) => f.label), ['A1', 'A2', 'B', 'Unpositioned']);
    // A later import without positions appends after everything.
    await srv.admin.importData(w.workspaceId, { customFields: [{ label: 'Later', type: 'url' }, { label: 'Latest', type: 'boolean' }] });
    assert.deepEqual((await listAll(w)).map((f) => f.label), ['A1', 'A2', 'B', 'Unpositioned', 'Later', 'Latest']);
    // …and a positioned one slots in by its position.
    await srv.admin.importData(w.workspaceId, { customFields: [{ label: 'First', type: 'text', position: 0 }] });
    assert.deepEqual((await listAll(w)).map((f) => f.label), ['First', 'A1', 'A2', 'B', 'Unpositioned', 'Later', 'Latest']);
  });

  // Paging itself (limits, cursors, another list's cursor) is checked for every list in test/lists.test.ts.
  test('GET /custom-fields in pages → every definition once, in position order, no page holding internal settings', async () => {
    const w = await space();
    const labels = Array.from({ length: 7 }, (_, n) => `F${n}`);
    await srv.admin.importData(w.workspaceId, { customFields: labels.map((label, n) => ({ label, type: 'text', position: 100 - n * 10, aiInstructions: SECRET })) });
    const pages = await walkList<{ label: string }>(async (p) => {
      const r = await w.call('GET', p);
      assert.equal(r.text.includes(SECRET), false);
      return r;
    }, F, 'customFields', 3);
    assert.deepEqual(pages.items.map((f) => f.label), [...labels].reverse());
    assert.deepEqual(pages.sizes, [3, 3, 1]);
    // limit equal to the count: one page, hasMore false.
    const one = await w.call<CustomFieldList>('GET', `${F}?limit=7`);
    assert.equal(one.body.hasMore, false);
    assert.equal(one.body.nextCursor, null);
    assert.equal(one.body.customFields.length, 7);
  });

  test('GET /custom-fields default page size is 20', async () => {
    const w = await space();
    await srv.admin.importData(w.workspaceId, { customFields: Array.from({ length: 21 }, (_, n) => ({ label: `F${n}`, type: 'text' })) });
    const r = await w.call<CustomFieldList>('GET', F);
    assert.equal(r.body.customFields.length, 20);
    assert.equal(r.body.hasMore, true);
    const rest = await w.call<CustomFieldList>('GET', `${F}?cursor=${encodeURIComponent(r.body.nextCursor!)}`);
    assert.deepEqual(rest.body.customFields.map((f: any) => f.label), ['F20']);
    assert.equal(rest.body.hasMore, false);
  });

  const badQueries: Array<[string, string]> = [
    ['limit=0', 'limit must be an integer from 1 to 100'],
    ['limit=101', 'limit must be an integer from 1 to 100'],
    ['limit=abc', 'limit must be an integer from 1 to 100'],
    ['limit=1.5', 'limit must be an integer from 1 to 100'],
    ['type=text', 'type is not supported'],
    ['limit=1&limit=2', 'limit must be given once'],
    ['cursor=xyz', 'cursor is invalid'],
  ];
  for (const [q, detail] of badQueries) {
    test(`GET /custom-fields?${q} → 400 invalid_request "${detail}"`, async () => {
      const w = await space();
      const r = await w.call('GET', `${F}?${q}`);
      assert.equal(r.status, 400);
      assert.deepEqual(r.body, invalidQuery(detail));
    });
  }

  test('GET /custom-fields lists only the key\'s workspace', async () => {
    const a = await space();
    const b = await space();
    await srv.admin.importData(a.workspaceId, { customFields: [{ label: 'Only A', type: 'text' }] });
    assert.deepEqual((await listAll(a)).map((f) => f.label), ['Only A']);
    assert.deepEqual(await listAll(b), []);
  });

  test('GET /custom-fields needs definitions:read: a conversations-only key → 403; no key → 401', async () => {
    const w = await space();
    const k = await srv.newKey({ workspaceId: w.workspaceId, scopes: 'conversations:read' });
    const r = await w.call('GET', F, { key: k });
    assert.equal(r.status, 403);
    assert.deepEqual(r.body, { code: 'insufficient_scope', error: 'This API key is missing the required scope: this operation needs definitions:read.' });
    const ok = await w.call('GET', F, { key: await srv.newKey({ workspaceId: w.workspaceId, scopes: 'definitions:read' }) });
    assert.equal(ok.status, 200);
    const none = await srv.call('GET', F, { key: null });
    assert.equal(none.status, 401);
    assert.deepEqual(none.body, { code: 'unauthorized', error: 'A valid workspace API key is required.' });
  });

  test('POST /custom-fields → 405 method_not_allowed (definitions are read-only over the API)', async () => {
    const w = await space();
    const r = await w.call('POST', F, { body: { label: 'x', type: 'text' } });
    assert.equal(r.status, 405);
    assert.deepEqual(r.body, { code: 'method_not_allowed', error: 'This method is not allowed on this path: use GET, HEAD.' });
    assert.equal(r.headers.get('allow'), 'GET, HEAD');
    assert.deepEqual(await listAll(w), []);
  });
});

describe('import of custom fields (admin)', () => {
  const refused: Array<[string, unknown, string]> = [
    ['an unknown type', { customFields: [{ label: 'ok', type: 'text' }, { label: 'x', type: 'color' }] },
      'import file is invalid: customFields[1].type must be one of text, number, decimal, boolean, date, datetime, url, select, multiselect.'],
    ['an unknown fillMode', { customFields: [{ label: 'x', type: 'text', fillMode: 'magic' }] },
      'import file is invalid: customFields[0].fillMode must be one of manual, ai, api, customer.'],
    ['a missing label', { customFields: [{ type: 'text' }] }, 'import file is invalid: customFields[0].label is required.'],
    ['an unknown property', { customFields: [{ label: 'x', type: 'text', secret: true }] }, 'import file is invalid: customFields[0].secret is not an allowed property.'],
    ['a negative position', { customFields: [{ label: 'x', type: 'text', position: -1 }] }, 'import file is invalid: customFields[0].position must be an integer from 0 to 1000000.'],
    ['a fractional position', { customFields: [{ label: 'x', type: 'text', position: 1.5 }] }, 'import file is invalid: customFields[0].position must be an integer.'],
    ['enabled as a string', { customFields: [{ label: 'x', type: 'text', enabled: 'yes' }] }, 'import file is invalid: customFields[0].enabled must be true or false.'],
    ['an empty option', { customFields: [{ label: 'x', type: 'select', options: ['a', ''] }] }, 'import file is invalid: customFields[0].options[1] must be 1 to 200 characters.'],
    ['a valid field but an invalid conversation later in the file',
      { customFields: [{ label: 'x', type: 'text' }], conversations: [{ subject: 'x', customer: { email: 'bad' } }] },
      'import file is invalid: conversations[0].customer.email must be a valid email address.'],
    ['a valid field but an issue with a missing conversation',
      { customFields: [{ label: 'x', type: 'text' }], issues: [{ subject: 'x', conversationExternalId: 'none' }] },
      'import file is invalid: issues[0].conversationExternalId matches no conversation.'],
  ];
  for (const [what, data, message] of refused) {
    test(`import with ${what} → refused, the CLI says "${message}"; no definition imported`, async () => {
      const w = await space();
      await assert.rejects(srv.admin.importData(w.workspaceId, data), refusedWith('import', message));
      assert.deepEqual(await listAll(w), []);
    });
  }
});
