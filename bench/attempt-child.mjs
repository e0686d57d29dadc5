// The process bench/attempt-instructions.ts counts under callgrind: delivery attempts made the
// way the dispatcher makes them (src/areas/webhooks/dispatcher.ts: the endpoint's URL parsed
// once, node:http's keep-alive agents of src/areas/webhooks/connections.ts, 10 at once), with
// the built modules of DIST. Plain JavaScript run by plain `node`, not through tsx: tsx's
// keepNames wraps every function made in an Object.defineProperty call, which the server never
// pays and which would be counted here.
// Environment: DIST, PORT (the receiver's), WARMUP, ATTEMPTS, SIGN ("1": sign each attempt as
// the dispatcher does).
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const dist = process.env.DIST;
const load = (m) => import(pathToFileURL(join(dist, 'areas', 'webhooks', m)).href);
const { DeliveryAgents } = await load('connections.js');
const { startAttempt } = await load('send.js');
const { signatureHeaders } = await load('signature.js');

const url = new URL(`http://127.0.0.1:${process.env.PORT}/hook`);
const body = Buffer.from(JSON.stringify({ object: 'event', id: '019ab0e2-6a10-7f02-8b44-51d9e0a7c3b4', type: 'conversation.updated', createdAt: '2026-11-25T03:00:00.000Z', data: { object: { subject: 'x'.repeat(1000) } } }));
const secrets = [`whsec_${Buffer.alloc(32, 7).toString('base64')}`];
const unsigned = { 'webhook-id': '019ab0e2-6a10-7f02-8b44-51d9e0a7c3b4', 'webhook-timestamp': '1795000000', 'webhook-signature': 'v1,x' };
const sign = process.env.SIGN === '1';
const agents = new DeliveryAgents(10, 64);

async function run(n) {
  let i = 0;
  const flow = async () => {
    while (i < n) {
      i++;
      const headers = sign ? signatureHeaders(secrets, unsigned['webhook-id'], 1795000000, body) : unsigned;
      // A long time limit: under valgrind an attempt runs ~50× slower.
      const settings = { timeoutMs: 600000, allowPrivate: true, agents };
      const o = await startAttempt('endpoint', url, body, headers, settings).outcome;
      if (!o.ok) throw new Error(o.error ?? 'the attempt failed');
    }
  };
  await Promise.all(Array.from({ length: 10 }, flow));
}

const control = (state) => execFileSync('callgrind_control', ['-i', state, String(process.pid)], { stdio: 'ignore' });
await run(Number(process.env.WARMUP));
control('on');
await run(Number(process.env.ATTEMPTS));
control('off');
agents.destroy();
