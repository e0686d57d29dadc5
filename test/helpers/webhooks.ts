/**
 * Shared setup of the webhook delivery tests: a test server (ManualClock, private addresses
 * allowed, a fixed jitter), a real receiver, an endpoint pointing at it, and readers of its
 * deliveries.
 */
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './server.js';
import { startReceiver, type Answer, type Received, type Receiver } from './receiver.js';

export interface Delivery {
  object: string; id: string; eventId: string; eventType: string; attempt: number; status: string;
  responseStatus: number | null; error: string | null; durationMs: number | null; createdAt: string; nextAttemptAt: string | null;
}
export interface Hook { id: string; secret: string; status: string; enabled: boolean; disabledReason: string | null }

export interface HookWorld {
  srv: TestServer;
  rx: Receiver;
  hook: Hook;
  /** The jitter the dispatcher draws next (0: none; 0.999: almost the full 10 %). */
  jitter: { value: number };
  /** The endpoint's deliveries, newest first. */
  deliveries(hookId?: string): Promise<Delivery[]>;
  /** The endpoint as GET answers it. */
  endpoint(hookId?: string): Promise<Hook>;
  /** Creates a conversation: one `conversation.created` event. */
  event(subject?: string): Promise<string>;
  close(): Promise<void>;
}

/** Starts the world; `answer` is the receiver's behaviour, `env` more settings. */
export async function hookWorld(answer: (r: Received) => Answer = () => ({ status: 200 }), env: Record<string, string> = {}): Promise<HookWorld> {
  const jitter = { value: 0 };
  const srv = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', RATE_LIMIT_BURST: '1000000', ...env }, webhookRandom: () => jitter.value });
  const rx = await startReceiver(answer);
  const made = await srv.call<{ webhookEndpoint: Hook }>('POST', '/api/v1/webhook-endpoints', { body: { url: `${rx.url}/hook`, events: ['*'] } });
  assert.equal(made.status, 201, made.text);
  const hook = made.body.webhookEndpoint;
  let n = 0;
  return {
    srv, rx, hook, jitter,
    async deliveries(hookId = hook.id) {
      const r = await srv.call<{ deliveries: Delivery[] }>('GET', `/api/v1/webhook-endpoints/${hookId}/deliveries?limit=100`);
      assert.equal(r.status, 200, r.text);
      return r.body.deliveries;
    },
    async endpoint(hookId = hook.id) {
      return (await srv.call<{ webhookEndpoint: Hook }>('GET', `/api/v1/webhook-endpoints/${hookId}`)).body.webhookEndpoint;
    },
    async event(subject = `Event ${++n}`) {
      const r = await srv.call<{ conversation: { id: string } }>('POST', '/api/v1/conversations', { body: { subject, customer: { email: `c${n}@example.com` } } });
      assert.equal(r.status, 201, r.text);
      return r.body.conversation.id;
    },
    async close() { await rx.close(); await srv.close(); },
  };
}

/** Runs `fn` in a fresh world and closes it. */
export async function inWorld(answer: ((r: Received) => Answer) | undefined, env: Record<string, string>, fn: (w: HookWorld) => Promise<void>): Promise<void> {
  const w = await hookWorld(answer, env);
  try { await fn(w); } finally { await w.close(); }
}

/** `ms` as the ISO time `base` + `ms`. */
export const at = (base: number, ms: number): string => new Date(base + ms).toISOString();
