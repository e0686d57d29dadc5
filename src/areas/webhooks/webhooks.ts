/**
 * Webhook endpoints (docs/api.md#webhooks): where a workspace's events are POSTed, signed with the endpoint's secret
 * (Standard Webhooks). The routes create, list, read, change, delete an endpoint, rotate its secret, and list its
 * deliveries; the deliveries themselves are made with each event (./state.ts) and sent by the dispatcher
 * (./dispatcher.ts).
 */
import { s } from '../../http/schema.js';
import { iso } from '../../core/clock.js';
import { SecretError, type SecretBox } from '../../core/secrets.js';
import type { Config } from '../../core/config.js';
import { route, type Ctx } from '../../domain/route.js';
import { listAnswer, listSchema, notFound, pageParams, paginate } from '../common.js';
import {
  MAX_ENDPOINTS, SECRET_OVERLAP_MS, createInput, deliverySchema, deliveryView, endpointSchema, endpointView,
    endpointWithSecretSchema,
  generateSecret, secretContext, updateInput, type WebhookEndpointRec,
} from './model.js';
import { checkEndpointUrl } from './urls.js';
import { createEndpoint, deleteEndpoint, distinct, enabledAs, putDisabled, putEnabled } from './endpoints.js';
import { deliveryKept } from './attach.js';
import { assertMaySubscribe } from './eventScopes.js';

/** What the webhook routes are built with. */
export interface WebhookRouteDeps { config: Config; secrets: SecretBox }

/** The endpoint `ctx.params.webhookEndpointId` of the key's workspace. @throws NotFoundError */
function endpointOf(ctx: Ctx<unknown, unknown>): WebhookEndpointRec {
  const e = ctx.ws.get('webhook_endpoint', ctx.params.webhookEndpointId);
  if (e === undefined) throw notFound();
  return e;
}

const endpointResponse = s.named('WebhookEndpointResponse', s.object({ webhookEndpoint: endpointSchema }));
const secretResponse = s.named('WebhookEndpointSecretResponse', s.object({
  webhookEndpoint: endpointWithSecretSchema }));

const base = '/api/v1/webhook-endpoints';
const one = `${base}/{webhookEndpointId}`;

/** The routes of docs/api.md#webhooks. */
export function webhookRoutes({ config, secrets }: WebhookRouteDeps) {
  /** The answer showing `secret` once; its idempotent replay shows `secret: null` (the secret is never stored in
   * clear). */
  const withSecret = (status: number, e: WebhookEndpointRec, secret: string) => ({
    status, body: { webhookEndpoint: { ...endpointView(e), secret } },
      replayBody: { webhookEndpoint: { ...endpointView(e), secret: null } },
  });
  return [
    route({
      method: 'POST', path: base, operationId: 'createWebhookEndpoint', tag: 'Webhooks', scope: 'webhooks:write',
      summary: `Create a webhook endpoint (at most ${MAX_ENDPOINTS} per workspace); the answer holds its signing `
        + `secret, shown only here and on rotation.`,
      body: createInput,
      success: { status: 201, schema: secretResponse, description: 'The endpoint with its secret.' },
      errors: [409],
      handler: async (ctx) => {
        const b = ctx.body;
        assertMaySubscribe(ctx.key.scopes, b.events);
        const url = await checkEndpointUrl(b.url, config.webhookAllowPrivate);
        const { rec, secret } = createEndpoint(ctx.ws, ctx.tx(), secrets, ctx.now, { url, events: b.events,
          description: b.description, enabled: b.enabled });
        return withSecret(201, rec, secret);
      },
    }),
    route({
      method: 'GET', path: base, operationId: 'listWebhookEndpoints', tag: 'Webhooks', scope: 'webhooks:read',
      summary: 'List webhook endpoints, oldest first (never their secrets).',
      query: s.object({ ...pageParams }),
      success: { status: 200, schema: listSchema('webhookEndpoints', endpointSchema),
        description: 'A page of endpoints.' },
      handler: (ctx) => {
        const page = paginate(ctx, 'webhook_endpoints', ctx.ws.webhooks.endpoints, 'asc', ctx.query, (id) =>
          ctx.ws.get('webhook_endpoint', id));
        return listAnswer('webhookEndpoints', page, page.items.map(endpointView));
      },
    }),
    route({
      method: 'GET', path: one, operationId: 'retrieveWebhookEndpoint', tag: 'Webhooks', scope: 'webhooks:read',
      summary: 'Retrieve a webhook endpoint (never its secret).',
      success: { status: 200, schema: endpointResponse, description: 'The endpoint.' },
      handler: (ctx) => ({ status: 200, body: { webhookEndpoint: endpointView(endpointOf(ctx)) } }),
    }),
    route({
      method: 'PATCH', path: one, operationId: 'updateWebhookEndpoint', tag: 'Webhooks', scope: 'webhooks:write',
      summary: 'Update a webhook endpoint: `url`, `events`, `description`, `enabled` (true enables an endpoint the '
        + 'server disabled again).',
      body: updateInput,
      success: { status: 200, schema: endpointResponse, description: 'The endpoint.' },
      handler: async (ctx) => {
        const b = ctx.body;
        endpointOf(ctx); // an unknown id is a 404 before any check of the body's url (docs/api.md: existence first)
        if (b.events !== undefined) assertMaySubscribe(ctx.key.scopes, b.events);
        const url = b.url === undefined ? undefined : await checkEndpointUrl(b.url, config.webhookAllowPrivate);
        const e = endpointOf(ctx); // again after the check: the endpoint may have been deleted meanwhile
        const next: WebhookEndpointRec = b.enabled === undefined ? { ...e } : enabledAs(e, b.enabled);
        if (url !== undefined) next.url = url;
        if (b.events !== undefined) next.events = distinct(b.events);
        if (b.description !== undefined) next.description = b.description;
        const changed = JSON.stringify(endpointView(next)) !== JSON.stringify(endpointView(e));
        if (!changed) return { status: 200, body: { webhookEndpoint: endpointView(e) } };
        next.updatedAt = iso(ctx.now);
        if (!next.enabled && e.enabled) putDisabled(ctx.ws, ctx.tx(), next);
        else putEnabled(ctx.ws, ctx.tx(), e, next);
        return { status: 200, body: { webhookEndpoint: endpointView(next) } };
      },
    }),
    route({
      method: 'DELETE', path: one, operationId: 'deleteWebhookEndpoint', tag: 'Webhooks', scope: 'webhooks:write',
      summary: 'Delete a webhook endpoint with its deliveries; nothing more is sent to it.',
      success: {
        status: 200, description: 'The endpoint is deleted.',
        schema: s.named('DeletedWebhookEndpoint', s.object({ object: s.enum(['webhook_endpoint'] as const),
          id: s.string(), deleted: s.boolean() })),
      },
      handler: (ctx) => {
        const e = endpointOf(ctx);
        deleteEndpoint(ctx.ws, ctx.tx(), e);
        return { status: 200, body: { object: 'webhook_endpoint', id: e.id, deleted: true } };
      },
    }),
    route({
      method: 'POST', path: `${one}/rotate-secret`, operationId: 'rotateWebhookEndpointSecret', tag: 'Webhooks',
        scope: 'webhooks:write',
      summary: 'Make a new signing secret, shown only in this answer; the previous one keeps signing beside it for 24 '
        + 'hours.',
      success: { status: 200, schema: secretResponse, description: 'The endpoint with its new secret.' },
      handler: (ctx) => {
        const e = endpointOf(ctx);
        const secret = generateSecret();
        const context = secretContext(ctx.ws.id, e.id);
        const next: WebhookEndpointRec = { ...e, secret: secrets.seal(secret, context), updatedAt: iso(ctx.now) };
        // Only the secret replaced now keeps signing; one replaced earlier stops at once. One that can no longer be
        // opened (a lost master key) is not kept either.
        let previous = true;
        try { secrets.open(e.secret, context); } catch (err) { if (err instanceof SecretError) previous =
          false; else throw err; }
        if (previous) next.previousSecret = { sealed: e.secret, expiresAt: iso(ctx.now + SECRET_OVERLAP_MS) };
        else delete next.previousSecret;
        ctx.tx().put('webhook_endpoint', e.id, next);
        return withSecret(200, next, secret);
      },
    }),
    route({
      method: 'GET', path: `${one}/deliveries`, operationId: 'listWebhookDeliveries', tag: 'Webhooks',
        scope: 'webhooks:read',
      summary: 'List the deliveries of a webhook endpoint, newest first (kept 30 days), optionally by status.',
      query: s.object({ ...pageParams, status: s.optional(s.enum(['pending', 'succeeded', 'failed'] as const, {
        description: 'Only deliveries in this status.' })) }),
      success: { status: 200, schema: listSchema('deliveries', deliverySchema), description: 'A page of deliveries.' },
      handler: (ctx) => {
        const e = endpointOf(ctx);
        const status = ctx.query.status;
        // Pending ones are few beside 30 days of settled ones: listed from their own index (same cursors).
        const index = status === 'pending' ? ctx.ws.webhooks.pendingIndex(e.id) : ctx.ws.webhooks.deliveriesOf(e.id);
        const page = paginate(ctx, 'webhook_deliveries', index, 'desc', ctx.query, (id) =>
          ctx.ws.webhooks.delivery(e.id, id),
          (d) => (status === undefined || d.status === status) && deliveryKept(d, ctx.now));
        return listAnswer('deliveries', page, page.items.map(deliveryView));
      },
    }),
  ];
}
