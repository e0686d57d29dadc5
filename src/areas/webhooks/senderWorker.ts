/**
 * The delivery worker's thread (src/areas/webhooks/sender.ts): signs each attempt it is handed
 * ({@link signatureHeaders}), makes it with {@link sendAttempt} through one keep-alive pool per
 * endpoint and URL, and posts the outcomes that ended in one turn back together.
 */
import http from 'node:http';
import https from 'node:https';
import { parentPort } from 'node:worker_threads';
import { sendAttempt, type AttemptOutcome } from './send.js';
import { signatureHeaders } from './signature.js';
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

/** The outcomes of this turn, posted at its end (null: none yet). */
let replies: SenderReply | null = null;
function reply(n: number, outcome: AttemptOutcome): void {
  if (replies === null) {
    const batch: SenderReply = (replies = []);
    setImmediate(() => { replies = null; parentPort!.postMessage(batch); });
  }
  replies.push({ n, outcome });
}

parentPort!.on('message', (m: SenderMessage) => {
  for (const id of m.drops) {
    pools.get(id)?.agent.destroy();
    pools.delete(id);
  }
  const { timeoutMs, allowPrivate, poolSize } = m.settings;
  for (const t of m.sends) {
    void sendAttempt(t.url, t.body, signatureHeaders(t.secrets, t.eventId, t.timestamp, t.body), { timeoutMs, allowPrivate, agent: poolOf(t.endpointId, t.url, poolSize) })
      .then((outcome) => reply(t.n, outcome));
  }
});
