/**
 * The delivery worker's thread (src/areas/webhooks/sender.ts): makes each attempt it is handed
 * with {@link sendAttempt}, one keep-alive pool per endpoint and URL, and posts the outcome back.
 */
import http from 'node:http';
import https from 'node:https';
import { parentPort } from 'node:worker_threads';
import { sendAttempt } from './send.js';
import type { SenderMessage, SenderReply } from './sender.js';

const pools = new Map<string, { url: string; agent: http.Agent }>();

/** The keep-alive pool of `endpointId` for `url` (a URL change starts a new pool). */
function poolOf(endpointId: string, url: string, size: number): http.Agent {
  const have = pools.get(endpointId);
  if (have !== undefined && have.url === url) return have.agent;
  have?.agent.destroy();
  const options = { keepAlive: true, maxSockets: size, maxFreeSockets: size };
  const agent = url.startsWith('https:') ? new https.Agent(options) : new http.Agent(options);
  pools.set(endpointId, { url, agent });
  return agent;
}

parentPort!.on('message', (m: SenderMessage) => {
  if ('drop' in m) {
    pools.get(m.drop)?.agent.destroy();
    pools.delete(m.drop);
    return;
  }
  const t = m.send;
  void sendAttempt(t.url, t.body, t.headers, { timeoutMs: m.timeoutMs, allowPrivate: m.allowPrivate, agent: poolOf(t.endpointId, t.url, m.poolSize) })
    .then((outcome) => parentPort!.postMessage({ n: t.n, outcome } satisfies SenderReply));
});
