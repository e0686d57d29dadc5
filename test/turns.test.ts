import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { once } from 'node:events';
import { nextTurn, waitingForTurns } from '../src/core/turns.js';

/** Busy work on the main thread for `ms` (the heavy step a turn stands for). */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* spin */ }
}

test('nextTurn: five heavy steps waiting at once take one loop iteration each, so I/O arriving meanwhile is served after at most one of them', async () => {
  const server = net.createServer((s) => s.on('data', () => { events.push('io'); s.end(); }));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const events: string[] = [];
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  await once(client, 'connect');
  const closed = once(client, 'close');
  const steps = [1, 2, 3, 4, 5].map(async (i) => { await nextTurn(); events.push(`turn ${i}`); busy(15); });
  assert.equal(waitingForTurns(), 5);
  client.resume(); // read to the end, so 'close' comes
  client.write('ping'); // arrives while the first step runs
  await Promise.all(steps);
  await closed;
  server.close();
  const io = events.indexOf('io');
  assert.ok(io >= 0 && io <= 2, `the socket was served after ${io} heavy steps: ${events.join(', ')}`);
  assert.deepEqual(events.filter((e) => e !== 'io'), ['turn 1', 'turn 2', 'turn 3', 'turn 4', 'turn 5'], 'turns are first come, first served');
  assert.equal(waitingForTurns(), 0);
});

test('nextTurn: a waiter queued during a turn comes after every waiter queued before it', async () => {
  const order: string[] = [];
  const a = nextTurn().then(() => { order.push('a'); return nextTurn().then(() => order.push('a again')); });
  const b = nextTurn().then(() => order.push('b'));
  await Promise.all([a, b]);
  assert.deepEqual(order, ['a', 'b', 'a again']);
});
