/**
 * Examples of the OpenAPI document (docs/api.md#openapi-document): one request body and one success body per
 * operationId. Typed with the schemas' static types, so a shape change breaks the build here; the document test checks
 * each against the document's schema and each request example against the validator.
 */
import type { Static } from '../http/schema.js';
import { API_VERSION } from '../http/pipeline.js';
import type { conversationSchema, messageSchema } from '../areas/conversations/conversations.js';
import type { issueSchema } from '../areas/issues.js';
import type { ingestionResultSchema, sourceSummarySchema } from '../areas/sources/model.js';
import type { customFieldSchema, tagSchema } from '../areas/definitions.js';
import { PRIORITY_LIST, STATUSES } from '../areas/definitions.js';
import type { agentSchema } from '../areas/agents.js';
import type { clientSchema } from '../areas/clients/clients.js';
import type { usageSchema } from '../areas/usage/usage.js';
import type { liveCheckSchema } from '../areas/sources/liveChecks.js';
import type { analyticsSchema } from '../areas/analytics/analytics.js';
import { CONVERSATION_STATUSES, CHANNELS } from '../areas/conversations/conversations.js';
import { ISSUE_STATES } from '../areas/issues.js';
import { PRIORITIES } from '../areas/common.js';

/** The request body (absent for operations without one) and the success body of one operation. */
export interface OperationExample { request?: unknown; response: unknown }

const ID = {
  conversation: '0197b5e2-1c4a-7d30-9a61-3f0c2b8e4d17',
  customer: '0197b5e2-1c4a-7d30-9a61-3f0c2b8e4d18',
  message: '0197b5e2-6a10-7f02-8b44-51d9e0a7c3b2',
  issue: '0197b5e3-0d7e-7a15-b2c9-8e41f6a0d955',
  source: '0197b5e4-2b90-7c6d-a1f3-6d2e8c4b7a01',
  docOverview: '0197b5e4-2f11-7e20-9c55-0a1b2c3d4e50',
  docOperation: '0197b5e4-2f11-7e20-9c55-0a1b2c3d4e51',
  endpointList: '0197b5e4-2f11-7e20-9c55-0a1b2c3d4e60',
  endpointCreate: '0197b5e4-2f11-7e20-9c55-0a1b2c3d4e61',
  customField: '0197b5e0-7e3a-7b81-8f26-c4d1a9e05b3c',
  tag: '0197b5e3-0d7e-7a15-b2c9-8e41f6a0d960',
  agent: '0197b5e0-9a4c-7d12-a8e7-2b6f0c3d1e84',
  client: '0197b5e2-1c4a-7d30-9a61-3f0c2b8e4d19',
  webhookEndpoint: '0197b5e5-3a01-7b22-9d10-4e5f6a7b8c90',
  answer: '0197b5e6-4b12-7c33-8e21-5f6a7b8c9d01',
};
const T0 = '2026-06-29T09:15:02.481Z';
const T1 = '2026-06-29T09:21:40.117Z';
const T2 = '2026-06-29T09:48:13.905Z';
const CURSOR = 'eyJ3IjoiMDE5N2I1ZTIiLCJrIjoiMjAyNi0wNi0yOVQwOToxNSJ9.q3vQ0pWn7l1c5Xk2bZ9fJg';

const customer = { id: ID.customer, name: 'Ada Lovelace', email: 'ada@example.com', company: 'Acme',
  identitySource: 'api' };
const createdConversation: Static<typeof conversationSchema> = {
  object: 'conversation', id: ID.conversation, externalId: 'ticket-1042', status: 'open', channel: 'api',
    priority: 'high',
  subject: 'Login fails after password reset', preview: '', customer, createdAt: T0, updatedAt: T0,
};
const conversation: Static<typeof conversationSchema> = {
  ...createdConversation, status: 'waiting', preview: 'Thanks Ada, we are looking into it.', updatedAt: T1,
    lastMessageAt: T1,
};
const message: Static<typeof messageSchema> = {
  object: 'message', id: ID.message, conversationId: ID.conversation, role: 'user', author: { type: 'api' },
    body: 'I cannot log in since I reset my password yesterday.', createdAt: T1,
};
const issue: Static<typeof issueSchema> = {
  object: 'issue', id: ID.issue, number: 42, subject: 'SSO login broken after password reset',
    preview: 'Users who reset their password cannot sign in with SSO.',
  description: 'Users who reset their password cannot sign in with SSO.', state: 'new', priority: 'high', tags: ['sso'],
  customer: { name: 'Ada Lovelace', email: 'ada@example.com', company: 'Acme' },
    source: { channel: 'api', conversationId: ID.conversation },
  createdAt: T2, updatedAt: T2, lastActivityAt: T2,
};
const source: Static<typeof sourceSummarySchema> = {
  object: 'source', id: ID.source, name: 'Petstore API', type: 'openapi', status: 'ready',
    inputUrl: 'https://petstore.example.com/openapi.json', error: null,
  auth: { configured: false, hasSecret: false, lastError: null, lastVerifiedAt: null, status: 'not_configured',
    type: null },
  publicDocs: { enabled: false, published: false, slug: null, url: null }, createdAt: T2, updatedAt: T2,
};
const ingestion: Static<typeof ingestionResultSchema> = {
  source,
  counts: { chunks: 14, documents: 2, endpoints: 2 },
  documents: [{ id: ID.docOverview, kind: 'overview', title: 'Petstore API' },
    { id: ID.docOperation, kind: 'operation', title: 'List pets' }],
  endpoints: [{ id: ID.endpointList, method: 'GET', path: '/pets' },
    { id: ID.endpointCreate, method: 'POST', path: '/pets' }],
};
const customField: Static<typeof customFieldSchema> = {
  object: 'custom_field', id: ID.customField, label: 'Plan', type: 'select', enabled: true, fillMode: 'manual',
  description: 'The customer\'s subscription plan.', options: ['Free', 'Pro', 'Enterprise'],
};
const tag: Static<typeof tagSchema> = { object: 'tag', id: ID.tag, name: 'sso' };
const agent: Static<typeof agentSchema> = {
  object: 'agent', id: ID.agent, name: 'Helpdesk assistant', description: 'Answers questions about the Petstore API.',
    enabled: true,
  widgetKey: 'svcw_4fT9kQ2mZx7Lr1Vb8Nc3Hs6Pd0Wy5Ja', sources: [ID.source], mode: 'suggest', instructions: '',
  handoffAfterUncertain: 2, allowedOrigins: ['https://shop.example'], createdAt: T0, updatedAt: T0,
};
const answer = {
  object: 'answer', id: ID.answer, conversationId: ID.conversation, messageId: ID.message, agentId: ID.agent,
  outcome: 'answered', text: 'From the documentation:\n\n[1] List pets (GET /pets)\n> GET /pets: List all pets.',
  citations: [{ sourceId: ID.source, documentId: ID.docOperation, endpointId: ID.endpointList, method: 'GET',
    path: '/pets', title: 'List pets', url: 'https://support.example.com/docs/petstore#get-pets', score: 7.31 }],
  model: null, createdAt: T2,
};
const client: Static<typeof clientSchema> = {
  object: 'client', id: ID.client, name: 'Acme', domain: 'example.com', conversationCount: 3, openCount: 1,
    waitingCount: 1, solvedCount: 1,
  customerCount: 2, issueCount: 1, firstSeenAt: T0, lastActivityAt: T2,
};
const usage: Static<typeof usageSchema> = {
  object: 'usage', periodStart: '2026-06-01T00:00:00.000Z', periodEnd: '2026-07-01T00:00:00.000Z', apiRequests: 1250,
    liveApiChecks: 12,
};
const liveCheck: Static<typeof liveCheckSchema> = {
  object: 'live_check', endpointId: ID.endpointList, method: 'GET',
    url: 'https://petstore.example.com/v1/pets?limit=10', status: 200, durationMs: 84,
  headers: { 'content-type': 'application/json' }, body: '[{"id":1,"name":"Rex","tag":"dog"}]', truncated: false,
};

/** Every key of `keys` with its count in `counts`, else 0 (the breakdowns of analytics). */
const zeros = (keys: readonly string[], counts: Record<string, number> = {}) =>
  Object.fromEntries(keys.map((k) => [k, counts[k] ?? 0]));
const analytics: Static<typeof analyticsSchema> = {
  object: 'analytics', from: '2026-06-27', to: '2026-06-29',
  conversations: {
    created: 3, solved: 1, byStatus: zeros(CONVERSATION_STATUSES, { open: 1, waiting: 1, solved: 1 }),
      byChannel: zeros(CHANNELS, { api: 2, email: 1 }),
    medianFirstResponseSeconds: 398, medianResolutionSeconds: 5420,
  },
  issues: { created: 1, closed: 0, byState: zeros(ISSUE_STATES, { new: 1 }),
    byPriority: zeros(PRIORITIES, { high: 1 }) },
  answers: {
    created: 4, byOutcome: { answered: 3, uncertain: 1, no_sources: 0 }, feedback: { helpful: 2, unhelpful: 1 },
    handoffs: { customer: 1, uncertain: 0, api: 0 },
    byAgent: [{ agentId: ID.agent, created: 4, byOutcome: { answered: 3, uncertain: 1, no_sources: 0 },
      feedback: { helpful: 2, unhelpful: 1 }, handoffs: { customer: 1, uncertain: 0, api: 0 } }],
    bySource: [{ sourceId: ID.source, cited: 4, byOutcome: { answered: 3, uncertain: 1, no_sources: 0 },
      feedback: { helpful: 2, unhelpful: 1 } }],
  },
  daily: [
    { date: '2026-06-27', conversationsCreated: 1, conversationsSolved: 0, issuesCreated: 0, issuesClosed: 0,
      answersCreated: 1, handoffsRequested: 0 },
    { date: '2026-06-28', conversationsCreated: 0, conversationsSolved: 1, issuesCreated: 0, issuesClosed: 0,
      answersCreated: 0, handoffsRequested: 0 },
    { date: '2026-06-29', conversationsCreated: 2, conversationsSolved: 0, issuesCreated: 1, issuesClosed: 0,
      answersCreated: 3, handoffsRequested: 1 },
  ],
};

/** A page of `items` under `name`, the shape of every list answer. */
const page = (name: string, items: unknown[], more = false) =>
  ({ object: 'list', hasMore: more, nextCursor: more ? CURSOR : null, [name]: items });

const conversationUpdated = {
  object: 'event', id: '0197b5e2-6a10-7f02-8b44-51d9e0a7c3b4', type: 'conversation.updated', createdAt: T1,
  data: { object: conversation },
  previousAttributes: { status: 'open', preview: '', updatedAt: T0, lastMessageAt: null },
};
const messageCreated = { object: 'event', id: '0197b5e2-6a10-7f02-8b44-51d9e0a7c3b3', type: 'message.created',
  createdAt: T1, data: { object: message } };

const webhookEndpoint = {
  object: 'webhook_endpoint', id: ID.webhookEndpoint, url: 'https://hooks.example.com/support',
  events: ['conversation.created', 'issue.created'], description: 'Ticket sync', enabled: true, status: 'enabled',
    disabledReason: null, createdAt: T0, updatedAt: T0,
};
const delivery = {
  object: 'webhook_delivery', id: '0197b5e5-3a01-7b22-9d10-4e5f6a7b8c91',
    eventId: '0197b5e2-6a10-7f02-8b44-51d9e0a7c3b4', eventType: 'conversation.updated',
  attempt: 2, status: 'pending', responseStatus: 503, error: 'the endpoint answered 503', durationMs: 112,
    createdAt: T1, nextAttemptAt: T2,
};

/** Examples by operationId. */
export const EXAMPLES: Record<string, OperationExample> = {
  health: { response: { status: 'ok' } },
  getOpenApiDocument: { response: { openapi: '3.1.0', info: { title: 'Support Workspace API', version: API_VERSION },
    paths: {}, components: {} } },

  listConversations: { response: page('conversations', [conversation], true) },
  createConversation: {
    request: { externalId: 'ticket-1042', subject: 'Login fails after password reset',
      customer: { email: 'ada@example.com', name: 'Ada Lovelace', company: 'Acme' }, priority: 'high' },
    response: { conversation: createdConversation },
  },
  retrieveConversation: { response: { conversation } },
  updateConversation: { request: { status: 'solved' }, response: { conversation: { ...conversation, status: 'solved',
    updatedAt: T2, closedAt: T2 } } },
  addMessage: { request: { role: 'user', body: message.body }, response: { message } },
  listMessages: { response: page('messages', [message]) },

  listIssues: { response: page('issues', [issue]) },
  createIssue: {
    request: { subject: issue.subject, description: issue.description, conversationId: ID.conversation, tags: ['sso'],
      priority: 'high' },
    response: { issue },
  },
  retrieveIssue: { response: { issue } },
  updateIssue: { request: { state: 'on_you', tags: ['sso', 'login'] },
    response: { issue: { ...issue, state: 'on_you', tags: ['sso', 'login'], updatedAt: T2 } } },

  createSource: { request: { url: 'https://petstore.example.com/openapi.json', name: 'Petstore API' },
    response: ingestion },
  listSources: { response: page('sources', [source]) },
  searchSources: {
    response: {
      object: 'list', hasMore: false, nextCursor: null,
      results: [{ object: 'search_result', sourceId: ID.source, documentId: ID.docOperation, title: 'List pets',
        score: 7.31, text: 'GET /pets: List all pets. Query: limit (integer, at most 100).' }],
    },
  },
  retrieveSource: { response: ingestion },
  updateSource: {
    request: { name: 'Petstore API (staging)', auth: { type: 'bearer', secret: 'petstore-staging-token' } },
    response: {
      source: {
        ...source, name: 'Petstore API (staging)', updatedAt: T2,
        auth: { configured: true, hasSecret: true, lastError: null, lastVerifiedAt: null, status: 'unverified',
          type: 'bearer' },
      },
    },
  },
  deleteSource: { response: { object: 'source', id: ID.source, deleted: true } },
  rescanSource: { request: {}, response: ingestion },
  createLiveCheck: { request: { endpointId: ID.endpointList, parameters: { limit: 10 } }, response: liveCheck },

  listCustomFields: { response: page('customFields', [customField]) },
  listTags: { response: page('tags', [tag]) },
  listStatuses: { response: page('statuses', STATUSES) },
  listPriorities: { response: page('priorities', PRIORITY_LIST) },
  listAgents: { response: page('agents', [agent]) },
  retrieveAgent: { response: { agent } },
  createAgent: { request: { name: 'Helpdesk assistant', sources: [ID.source], mode: 'suggest' }, response: { agent } },
  updateAgent: { request: { mode: 'reply' }, response: { agent: { ...agent, mode: 'reply', updatedAt: T2 } } },
  createAnswer: { request: { agentId: ID.agent }, response: { answer } },
  listAnswers: { response: page('answers', [answer]) },
  listClients: { response: page('clients', [client]) },
  retrieveClient: { response: { client } },
  retrieveUsage: { response: usage },
  retrieveAnalytics: { response: analytics },

  createWebhookEndpoint: {
    request: { url: 'https://hooks.example.com/support', events: ['conversation.created', 'issue.created'],
      description: 'Ticket sync' },
    response: { webhookEndpoint: { ...webhookEndpoint, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' } },
  },
  listWebhookEndpoints: { response: page('webhookEndpoints', [webhookEndpoint]) },
  retrieveWebhookEndpoint: { response: { webhookEndpoint } },
  updateWebhookEndpoint: { request: { enabled: false }, response: { webhookEndpoint: { ...webhookEndpoint,
    enabled: false, status: 'disabled', updatedAt: T2 } } },
  deleteWebhookEndpoint: { response: { object: 'webhook_endpoint', id: ID.webhookEndpoint, deleted: true } },
  rotateWebhookEndpointSecret: { request: {}, response: { webhookEndpoint: { ...webhookEndpoint,
    secret: 'whsec_cGxlYXNlIGRvIG5vdCB1c2UgdGhpcyBleGFtcGxl', updatedAt: T2 } } },
  listWebhookDeliveries: { response: page('deliveries', [delivery]) },
  listEvents: { response: page('events', [conversationUpdated, messageCreated], true) },
  retrieveEvent: { response: { event: conversationUpdated } },
  streamEvents: { response: `retry: 2000\n\nid: ${messageCreated.id}\nevent: message.created\ndata: ${
    JSON.stringify(messageCreated)}\n\n` },
  requestHandoff: { response: { conversation: { ...conversation, status: 'open', updatedAt: T2,
    handoff: { requestedAt: T2, reason: 'api' } } } },
  ...widgetExamples(),
};

/** The widget API's examples (docs/api.md#live-chat). */
function widgetExamples(): Record<string, OperationExample> {
  const conv = { object: 'conversation', id: ID.conversation, status: 'open', subject: 'Where is my order?',
    preview: 'Where is my order?', createdAt: T1, updatedAt: T1, lastMessageAt: T1 };
  const msg = { object: 'message', id: ID.message, conversationId: ID.conversation, author: { type: 'customer' },
    body: 'Where is my order?', createdAt: T1 };
  const visitorId = 'vis_4fT9kQ2mZx7Lr1Vb8Nc3Hs';
  const created = { object: 'event', id: '0197b5e2-6a10-7f02-8b44-51d9e0a7c3b3', type: 'message.created',
    createdAt: T1, data: { object: msg } };
  return {
    createWidgetSession: { request: { visitorId }, response: { session: {
      token: 'svcs_0197b5e2-0000-7000-8000-000000000001_4fT9kQ2mZx7Lr1Vb8Nc3Hs6Pd0Wy5JaXXXXXXXXXXXX',
      expiresAt: T2, visitorId, customer: { id: visitorId, name: null, email: null, identitySource: 'anonymous' } } } },
    createWidgetConversation: { request: { body: 'Where is my order?' }, response: { conversation: conv } },
    listWidgetConversations: { response: page('conversations', [conv]) },
    listWidgetMessages: { response: page('messages', [msg]) },
    createWidgetMessage: { request: { body: 'Where is my order?' }, response: { message: msg } },
    requestWidgetHandoff: { response: { conversation: { ...conv, handoff: { requestedAt: T2, reason: 'customer' } } } },
    createWidgetFeedback: { request: { helpful: true }, response: { feedback: { answerId: ID.answer, helpful: true,
      createdAt: T2 } } },
    streamWidgetEvents: { response: `retry: 2000\n\nid: ${created.id}\nevent: message.created\ndata: ${
      JSON.stringify(created)}\n\n` },
  };
}
