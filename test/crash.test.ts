/**
 * Durability of the real server process (docs/storage.md#promises): kill -9
 * during concurrent writes, during compaction, and during an admin CLI import written as a
 * frame of many lines (docs/storage.md#frames). Torn and corrupt logs and the data dir's
 * lock are in test/datadir.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, fstatSync, openSync, readdirSync, readFileSync, readSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, runCli, startServer, tempDir, type HttpResult, type RunningChild } from './helpers/child.js';
import { mulberry32 as prng } from './helpers/prng.js';
import { walkList } from './helpers/lists.js';
import type { ConversationAnswer } from './helpers/answers.js';



/** One write the test sent, and what the server answered (if it answered before it died). */
interface Write {
  method: 'POST' | 'PATCH';
  path: string;
  body: Record<string, unknown>;
  idemKey?: string;
  /** The kill round it was sent in. */
  round: number;
  /** Set once a 2xx arrived: the write is acknowledged and must survive. */
  ack?: { status: number; body: any };
}

interface ConvAttempt { externalId: string; subject: string; email: string; write: Write }
interface MsgAttempt { targetId: string; role: 'user' | 'agent'; body: string; write: Write }
interface Target { id: string; externalId: string; subject: string; subjectPatch?: Write; priorityPatch?: Write }

const EMAILS = ['ann@acme.test', 'bob@acme.test', 'cy@globex.test', 'di@initech.test', 'ed@umbrella.test'];
const PRIORITIES = ['urgent', 'high', 'low'] as const;

/**
 * Every lane is a `fetch` from this one address, and with 200+ requests in flight its pool
 * holds more connections than MAX_CONNECTIONS_PER_ADDRESS (256) allows: the cap is lifted, so
 * that a refused connection is never mistaken for the kill.
 */
const ONE_CLIENT = { MAX_CONNECTIONS_PER_ADDRESS: '1000000' };

async function send<B = unknown>(base: string, key: string, w: Write): Promise<HttpResult<B>> {
  return call<B>(base, w.method, w.path, { key, body: w.body, headers: w.idemKey ? { 'Idempotency-Key': w.idemKey } : {} });
}

/** Every page of a list endpoint. */
async function listAll(base: string, key: string, path: string, items: string): Promise<any[]> {
  return (await walkList<any>((p) => call(base, 'GET', p, { key }), path, items, 100)).items;
}

test('kill -9 during 200+ concurrent writes, repeated: every acknowledged write survives, none is duplicated, idempotent retries replay', async (t) => {
  const seed = Date.now() % 1_000_000;
  t.diagnostic(`seed ${seed}`);
  const rand = prng(seed);
  const randInt = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const dataDir = tempDir('sw-crash-');
  const env = { SYNC: 'always', RATE_LIMIT_BURST: '10000000', RATE_LIMIT_PER_MINUTE: '10000000', LOG_LEVEL: 'info', ...ONE_CLIENT };

  const convs: ConvAttempt[] = [];
  const msgs: MsgAttempt[] = [];
  const targets: Target[] = [];
  let key = '';
  /** Unanswered writes found on disk after a restart (their retry was replayed). */
  let writtenUnanswered = 0;
  /** Writes left without an answer by the kills. */
  let cutOff = 0;

  /** Checks everything sent so far against what a freshly started server serves. */
  async function verify(srv: RunningChild, label: string): Promise<void> {
    const base = srv.url;
    // Requests with an Idempotency-Key that died unanswered: a retry now must take effect
    // exactly once (replayed if the first attempt was written, performed if it was not).
    for (const w of [...convs.map((c) => c.write), ...msgs.map((m) => m.write)]) {
      if (!w.idemKey || w.ack) continue;
      const r = await send(base, key, w);
      assert.equal(r.status, 201, `${label}: retry of unanswered ${w.method} ${w.path}: ${r.text}`);
      if (r.headers.get('idempotent-replayed') === 'true') writtenUnanswered++;
      w.ack = { status: r.status, body: r.body };
    }

    const all = await listAll(base, key, '/api/v1/conversations', 'conversations');
    const byExt = new Map<string, any>();
    for (const c of all) {
      assert.ok(!byExt.has(c.externalId), `${label}: externalId ${c.externalId} stored twice`);
      byExt.set(c.externalId, c);
    }
    const attempted = new Map(convs.map((c) => [c.externalId, c]));
    for (const c of all) {
      const a = attempted.get(c.externalId);
      assert.ok(a, `${label}: conversation ${c.externalId} was never sent`);
      assert.equal(c.customer.email, a.email);
    }
    let ackedConvs = 0;
    for (const a of convs) {
      const got = byExt.get(a.externalId);
      if (!a.write.ack) continue;
      ackedConvs++;
      assert.ok(got, `${label}: acknowledged conversation ${a.externalId} is lost`);
      assert.equal(got.id, a.write.ack.body.conversation.id, `${label}: ${a.externalId} has another id`);
    }
    assert.ok(all.length >= ackedConvs && all.length <= convs.length, `${label}: ${all.length} conversations, ${ackedConvs} acknowledged, ${convs.length} sent`);

    // One customer id per email, however the creates interleaved and whatever was cut.
    const customerIds = new Map<string, string>();
    for (const c of all) {
      const known = customerIds.get(c.customer.email);
      if (known) assert.equal(c.customer.id, known, `${label}: ${c.customer.email} has two customer ids`);
      else customerIds.set(c.customer.email, c.customer.id);
    }

    for (const tg of targets) {
      const conv = byExt.get(tg.externalId);
      assert.ok(conv, `${label}: target ${tg.externalId} lost`);
      const r = await call<ConversationAnswer>(base, 'GET', `/api/v1/conversations/${tg.id}`, { key });
      assert.equal(r.status, 200, r.text);
      const { subject, priority } = r.body.conversation;
      if (tg.subjectPatch?.ack) assert.equal(subject, tg.subjectPatch.body.subject, `${label}: acknowledged PATCH subject lost on ${tg.externalId}`);
      else assert.ok([tg.subject, tg.subjectPatch?.body.subject].includes(subject), `${label}: unexpected subject ${subject}`);
      if (tg.priorityPatch?.ack) assert.equal(priority, tg.priorityPatch.body.priority, `${label}: acknowledged PATCH priority lost on ${tg.externalId}`);
      else assert.ok(['medium', tg.priorityPatch?.body.priority].includes(priority), `${label}: unexpected priority ${priority}`);

      const sent = msgs.filter((m) => m.targetId === tg.id);
      const stored = await listAll(base, key, `/api/v1/conversations/${tg.id}/messages`, 'messages');
      const bodies = new Map<string, any>();
      for (const m of stored) {
        assert.ok(!bodies.has(m.body), `${label}: message ${m.body} stored twice`);
        bodies.set(m.body, m);
        const a = sent.find((s) => s.body === m.body);
        assert.ok(a, `${label}: message ${m.body} was never sent`);
        assert.equal(m.role, a.role);
        assert.equal(m.conversationId, tg.id);
      }
      const acked = sent.filter((m) => m.write.ack);
      for (const a of acked) {
        const m = bodies.get(a.body);
        assert.ok(m, `${label}: acknowledged message ${a.body} is lost`);
        assert.equal(m.id, a.write.ack!.body.message.id);
      }
      assert.ok(stored.length >= acked.length && stored.length <= sent.length, `${label}: ${stored.length} messages, ${acked.length} acknowledged, ${sent.length} sent`);
    }

    // An acknowledged request sent again with its Idempotency-Key replays the original answer:
    // all of the last round's, and a sample of the earlier rounds' (still there after more restarts).
    const acked = [...convs.map((c) => c.write), ...msgs.map((m) => m.write)].filter((w) => w.idemKey && w.ack);
    const last = Math.max(...acked.map((w) => w.round));
    const older = acked.filter((w) => w.round < last);
    const replays = [...acked.filter((w) => w.round === last), ...Array.from({ length: Math.min(60, older.length) }, () => older[Math.floor(rand() * older.length)])];
    await Promise.all(replays.map(async (w) => {
      const r = await send(base, key, w);
      assert.equal(r.status, w.ack!.status, `${label}: replay of ${w.idemKey}: ${r.text}`);
      assert.equal(r.headers.get('idempotent-replayed'), 'true', `${label}: ${w.idemKey} was not replayed`);
      assert.deepEqual(r.body, w.ack!.body, `${label}: replay of ${w.idemKey} differs from the original answer`);
    }));
  }

  // `npm test` runs 6 kill rounds; `npm run test:crash` runs CRASH_ROUNDS (50).
  const ITERATIONS = Number(process.env.CRASH_ROUNDS ?? 6);
  for (let it = 0; it <= ITERATIONS; it++) {
    const srv = await startServer({ dataDir, env });
    try {
      if (it === 0) key = await srv.waitForKey();
      else {
        try { await verify(srv, `after kill ${it}`); } catch (e) {
          // Say what the restarted server itself reported: a rare failure here is still unexplained.
          const exited = await Promise.race([srv.exited, new Promise((r) => setTimeout(() => r('still running'), 200))]);
          throw new Error(`${(e as Error).message}\n-- restarted server (${JSON.stringify(exited)}) stderr:\n${srv.stderr.slice(-4000)}`, { cause: e });
        }
      }
      if (it === ITERATIONS) break;
      const base = srv.url;

      // Conversations that this round's messages and PATCHes go to (acknowledged before the storm).
      const round: Target[] = await Promise.all(Array.from({ length: 12 }, async (_, j) => {
        const externalId = `r${it}-target-${j}`;
        const subject = `Target ${it}/${j}`;
        const email = EMAILS[j % EMAILS.length];
        const write: Write = { method: 'POST', path: '/api/v1/conversations', body: { externalId, subject, customer: { email } }, round: it };
        const r = await send<ConversationAnswer>(base, key, write);
        assert.equal(r.status, 201, r.text);
        write.ack = { status: r.status, body: r.body };
        convs.push({ externalId, subject, email, write });
        return { id: r.body.conversation.id as string, externalId, subject };
      }));
      targets.push(...round);

      // The storm: LANES concurrent clients, each sending its next write as soon as the last
      // one is answered, so 200+ writes are always in flight; SIGKILL once a random number
      // of them has been acknowledged (always before the supply runs out).
      const patches: Write[] = [];
      for (const [ti, tg] of round.entries()) {
        tg.subjectPatch = { method: 'PATCH', path: `/api/v1/conversations/${tg.id}`, body: { subject: `Patched ${it}/${ti}` }, round: it };
        tg.priorityPatch = { method: 'PATCH', path: `/api/v1/conversations/${tg.id}`, body: { priority: PRIORITIES[ti % PRIORITIES.length] }, round: it };
        patches.push(tg.subjectPatch, tg.priorityPatch);
      }
      let made = 0;
      const next = (): Write => {
        const j = made++;
        const roll = rand();
        if (patches.length && roll < 0.05) return patches.pop()!;
        if (roll < 0.5) {
          const externalId = `r${it}-conv-${j}`;
          const subject = `Storm ${it}/${j}`;
          const email = EMAILS[randInt(0, EMAILS.length - 1)];
          const write: Write = { method: 'POST', path: '/api/v1/conversations', body: { externalId, subject, customer: { email, name: `N${j}` } }, round: it };
          if (rand() < 0.5) write.idemKey = `idem-${seed}-r${it}-conv-${j}`;
          convs.push({ externalId, subject, email, write });
          return write;
        }
        const tg = round[randInt(0, round.length - 1)];
        const role = rand() < 0.5 ? 'user' : 'agent';
        const body = `r${it}-msg-${j} ${'x'.repeat(randInt(0, 600))}`;
        const write: Write = { method: 'POST', path: `/api/v1/conversations/${tg.id}/messages`, body: { role, body }, round: it };
        if (rand() < 0.5) write.idemKey = `idem-${seed}-r${it}-msg-${j}`;
        msgs.push({ targetId: tg.id, role, body, write });
        return write;
      };
      const LANES = 220;
      const SUPPLY = 1600;
      const killAfter = randInt(LANES, 1000);
      const sent: Write[] = [];
      let acks = 0;
      let killed = false;
      let inFlightAtKill = 0;
      let inFlight = 0;
      await Promise.all(Array.from({ length: LANES }, async () => {
        while (!killed && made < SUPPLY) {
          const w = next();
          sent.push(w);
          inFlight++;
          try {
            const r = await send(base, key, w);
            assert.ok(r.status >= 200 && r.status < 300, `unexpected ${r.status} for ${w.method} ${w.path}: ${r.text}`);
            w.ack = { status: r.status, body: r.body };
            if (++acks === killAfter) { killed = true; inFlightAtKill = inFlight - 1; srv.proc.kill('SIGKILL'); }
          } catch (e) {
            if (e instanceof assert.AssertionError) throw e;
            // The connection died with the server: the write is unacknowledged.
            killed = true;
          } finally { inFlight--; }
        }
      }));
      const exit = await srv.exited;
      assert.deepEqual(exit, { code: null, signal: 'SIGKILL' }, `round ${it}: the server was not killed mid-storm (${acks} acks, killAfter ${killAfter}) ${srv.stderr}`);
      assert.ok(made < SUPPLY, `round ${it}: the kill came before the writes ran out`);
      assert.ok(inFlightAtKill >= 200, `round ${it}: ${inFlightAtKill} writes were in flight at the kill`);
      // Under load the client can lag so far behind that the server has answered all it got
      // when the kill lands; over all rounds, some kill must cut writes off (asserted below).
      const unanswered = sent.filter((w) => !w.ack).length;
      cutOff += unanswered;
      t.diagnostic(`round ${it}: killed after ${killAfter} acks; ${unanswered} of ${sent.length} writes unanswered`);
    } finally {
      await srv.stop('SIGKILL');
    }
  }
  assert.ok(cutOff > 0, 'the kills cut writes off before their answer');
  const cut = readdirSync(join(dataDir, 'workspaces')).filter((f) => f.includes('.corrupt-'));
  t.diagnostic(`torn tails set aside: ${cut.length}; unanswered writes found written (and replayed): ${writtenUnanswered}`);
});

test('kill -9 while the log is being compacted under 200 concurrent updates: each record is its last acknowledged or its in-flight value', async (t) => {
  const env = { SYNC: 'always', RATE_LIMIT_BURST: '10000000', RATE_LIMIT_PER_MINUTE: '10000000', ...ONE_CLIENT };
  const LANES = 200;
  // Compaction starts once the operations written after the last snapshot block pass twice the
  // ones it holds by 1,000 (docs/storage.md#compaction): a fresh log holds none, so the first one
  // starts near 1,000 operations (each update writes two, the conversation and its event), and
  // the next ones as the dead versions and the log grow. Each kill lands after 2 × (LANES + 1,000) updates,
  // while a compaction may run. Each round starts from a fresh data dir.
  const COMPACTS_AT = 2 * (LANES + 1000);
  const seed = Date.now() % 1_000_000;
  t.diagnostic(`seed ${seed}`);
  const rand = prng(seed);
  for (let round = 0; round < 3; round++) {
    const dataDir = tempDir('sw-compact-');
    /** Per lane: its conversation, the last acknowledged subject, and the one in flight (if any). */
    const lanes: Array<{ id: string; acked: string; inFlight?: string; n: number }> = [];
    const srv = await startServer({ dataDir, env });
    let key = '';
    let acks = 0;
    const killAfter = COMPACTS_AT + Math.floor(rand() * 1500);
    try {
      key = await srv.waitForKey();
      for (let l = 0; l < LANES; l++) {
        const r = await call<ConversationAnswer>(srv.url, 'POST', '/api/v1/conversations', { key, body: { subject: `lane ${l} start`, customer: { email: `l${l}@example.com` } } });
        assert.equal(r.status, 201, r.text);
        lanes.push({ id: r.body.conversation.id, acked: `lane ${l} start`, n: 0 });
      }
      let killed = false;
      await Promise.all(lanes.map(async (lane, l) => {
        while (!killed) {
          const subject = `lane ${l} round ${round} n ${++lane.n}`;
          lane.inFlight = subject;
          try {
            const r = await call(srv.url, 'PATCH', `/api/v1/conversations/${lane.id}`, { key, body: { subject } });
            assert.equal(r.status, 200, r.text);
            lane.acked = subject;
            lane.inFlight = undefined;
            if (++acks === killAfter) { killed = true; srv.proc.kill('SIGKILL'); }
          } catch (e) {
            if (e instanceof assert.AssertionError) throw e;
            killed = true;
          }
        }
      }));
      assert.deepEqual(await srv.exited, { code: null, signal: 'SIGKILL' });
    } finally { await srv.stop('SIGKILL'); }
    const log = join(dataDir, 'workspaces', readdirSync(join(dataDir, 'workspaces')).find((f) => f.endsWith('.log'))!);
    const logLines = readFileSync(log).toString('latin1').split('\n').length - 1;
    assert.ok(logLines < acks, `round ${round}: the log was compacted (${logLines} lines for ${acks} updates)`);
    t.diagnostic(`round ${round}: killed after ${killAfter} updates; the log has ${logLines} lines`);
    const again = await startServer({ dataDir, env });
    try {
      const all = await listAll(again.url, key, '/api/v1/conversations', 'conversations');
      assert.equal(all.length, LANES);
      for (const [l, lane] of lanes.entries()) {
        const c = all.find((x) => x.id === lane.id);
        assert.ok(c, `lane ${l}: conversation lost`);
        assert.ok([lane.acked, lane.inFlight].includes(c.subject), `after kill ${round}, lane ${l}: subject ${c.subject}, acknowledged ${lane.acked}, in flight ${lane.inFlight}`);
      }
    } finally { await again.stop('SIGKILL'); }
  }
});

test('kill -9 while a compaction writes its new file (its put lines, its snapshot block, the lines copied after it) under concurrent writes: nothing acknowledged is lost, and the restart loads the old log or the new one', { timeout: 600_000 }, async (t) => {
  const env = { SYNC: 'always', RATE_LIMIT_BURST: '10000000', RATE_LIMIT_PER_MINUTE: '10000000', ...ONE_CLIENT };
  // ~25,000 records (3,000 conversations of 7 messages), so that writing the compacted file takes a while.
  const CONVS = 3000;
  const t0 = Date.parse('2026-02-01T08:00:00Z');
  const importFile = join(tempDir('sw-snapkill-file-'), 'import.json');
  writeFileSync(importFile, JSON.stringify({
    conversations: Array.from({ length: CONVS }, (_, c) => ({
      externalId: `imp-${c}`, subject: `Imported ${c}`, customer: { email: `c${c % 50}@example.com` }, createdAt: new Date(t0 + c * 60_000).toISOString(),
      messages: Array.from({ length: 7 }, (_, m) => ({ role: m % 2 ? 'agent' : 'user', body: `conversation ${c} message ${m} `.padEnd(300, 'lorem '), createdAt: new Date(t0 + c * 60_000 + m * 1000).toISOString() })),
    })),
  }));
  const seed = Date.now() % 1_000_000;
  t.diagnostic(`seed ${seed}`);
  const rand = prng(seed);
  const LANES = 40;
  const landed: string[] = [];
  // The kill: as soon as the temp file is seen, then a little later, later still, and after it is gone.
  const delays = [0, 5 + rand() * 20, 30 + rand() * 100, Infinity];
  for (const [round, delay] of delays.entries()) {
    const dataDir = tempDir('sw-snapkill-');
    const srv = await startServer({ dataDir, env });
    let key = '';
    let wsId = '';
    const lanes: Array<{ id: string; acked: string; inFlight?: string; messages: string[] }> = [];
    let sawTemp = false;
    try {
      key = await srv.waitForKey();
      const list = await runCli<{ workspaces: Array<{ id: string }> }>(dataDir, ['workspace', 'list']);
      wsId = list.json.workspaces[0].id;
      const imported = await runCli(dataDir, ['import', '--workspace', wsId, importFile], { timeoutMs: 300_000 });
      assert.equal(imported.code, 0, imported.stderr);
      const dir = join(dataDir, 'workspaces');
      const temp = () => readdirSync(dir).some((f) => f.includes('.compact-'));
      // The import compacts the log by itself (its lines outgrow a block of none): let that one end.
      for (let i = 0; i < 3000 && temp(); i++) await new Promise((r) => setTimeout(r, 5));
      const convs = await listAll(srv.url, key, '/api/v1/conversations', 'conversations');
      for (const c of convs.slice(0, LANES)) lanes.push({ id: c.id, acked: c.subject, messages: [] });
      let killed = false;
      const writers = Promise.all(lanes.map(async (lane, l) => {
        for (let n = 0; !killed; n++) {
          try {
            if (n % 2 === 0) {
              const subject = `lane ${l} n ${n}`;
              lane.inFlight = subject;
              const r = await call(srv.url, 'PATCH', `/api/v1/conversations/${lane.id}`, { key, body: { subject } });
              assert.equal(r.status, 200, r.text);
              lane.acked = subject;
              lane.inFlight = undefined;
            } else {
              const r = await call<{ message: { id: string } }>(srv.url, 'POST', `/api/v1/conversations/${lane.id}/messages`, { key, body: { role: 'user', body: `lane ${l} n ${n}` } });
              assert.equal(r.status, 201, r.text);
              lane.messages.push(r.body.message.id);
            }
          } catch (e) {
            if (e instanceof assert.AssertionError) throw e;
            killed = true;
          }
        }
      }));
      await new Promise((r) => setTimeout(r, 100)); // writes going on
      const compact = runCli(dataDir, ['compact', '--workspace', wsId], { timeoutMs: 120_000 });
      const deadline = Date.now() + 60_000;
      while (!temp() && Date.now() < deadline) await new Promise((r) => setImmediate(r));
      sawTemp = temp();
      if (delay === Infinity) { const c = await compact; assert.equal(c.code, 0, c.stderr); } else if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      const tempAtKill = temp();
      srv.proc.kill('SIGKILL');
      killed = true;
      assert.deepEqual(await srv.exited, { code: null, signal: 'SIGKILL' });
      await writers;
      await compact;
      landed.push(`round ${round}: killed ${delay === Infinity ? 'after the compaction answered' : tempAtKill ? `while the temp file was being written (${Math.round(delay)} ms after it appeared)` : `after the rename (${Math.round(delay)} ms after the temp file appeared)`}`);
    } finally { await srv.stop('SIGKILL'); }
    assert.ok(sawTemp, `round ${round}: the compaction's temp file was seen`);
    const again = await startServer({ dataDir, env });
    try {
      const loaded = again.logLines().find((l) => l.msg === 'log loaded' && String(l.file).includes(wsId));
      assert.ok(loaded, 'the workspace log was loaded');
      assert.ok(!again.logLines().some((l) => l.msg === 'snapshot block not used: the log was replayed in full'), `round ${round}: a block is never half written`);
      assert.deepEqual(readdirSync(join(dataDir, 'workspaces')).filter((f) => f.includes('.compact-')), [], `round ${round}: no temp file left`);
      landed[landed.length - 1] += `; restarted from ${loaded!.snapshot ? `a snapshot block (${loaded!.records} records, ${loaded!.replayedOps} operations after it)` : 'a full replay'}`;
      const all = await listAll(again.url, key, '/api/v1/conversations', 'conversations');
      assert.equal(all.length, CONVS, `round ${round}: the imported conversations`);
      for (const [l, lane] of lanes.entries()) {
        const c = all.find((x) => x.id === lane.id);
        assert.ok([lane.acked, lane.inFlight].includes(c.subject), `round ${round}, lane ${l}: subject ${c.subject}, acknowledged ${lane.acked}, in flight ${lane.inFlight}`);
        const msgs = new Set((await listAll(again.url, key, `/api/v1/conversations/${lane.id}/messages`, 'messages')).map((m) => m.id));
        for (const m of lane.messages) assert.ok(msgs.has(m), `round ${round}, lane ${l}: acknowledged message ${m} lost`);
      }
    } finally { await again.stop('SIGKILL'); }
    if (delay !== Infinity) continue;
    // The last round's log has a fresh block: a flipped byte in it costs a warning and a full replay, no data.
    const file = join(dataDir, 'workspaces', `${wsId}.log`);
    const buf = readFileSync(file);
    const at = buf.indexOf('{"snapshot":"state"');
    assert.ok(at > 0, 'the compacted log has a snapshot block');
    buf[at + 50] ^= 0x02;
    writeFileSync(file, buf);
    const third = await startServer({ dataDir, env });
    try {
      const warned = third.logLines().find((l) => l.msg === 'snapshot block not used: the log was replayed in full');
      assert.ok(warned && /damaged/.test(String(warned.reason)), 'a warning names the damaged block');
      const all = await listAll(third.url, key, '/api/v1/conversations', 'conversations');
      assert.equal(all.length, CONVS);
      for (const lane of lanes) assert.ok([lane.acked, lane.inFlight].includes(all.find((x) => x.id === lane.id).subject));
      landed[landed.length - 1] += '; then a flipped byte in its block: a warning, a full replay, every acknowledged write there';
    } finally { await third.stop('SIGKILL'); }
  }
  for (const l of landed) t.diagnostic(l);
  assert.ok(landed.some((l) => l.includes('while the temp file was being written')), 'a kill landed while the new file was written');
});

test('kill -9 during an admin CLI import of a big file (one transaction, a frame of many lines): after restart the import is all there or not at all, and every acknowledged write is there', { timeout: 600_000 }, async (t) => {
  const env = { SYNC: 'always', RATE_LIMIT_BURST: '10000000', RATE_LIMIT_PER_MINUTE: '10000000', ...ONE_CLIENT };
  // A 17 MB import file: in the log, a frame of ~21 lines of at most 1 MiB over several 4 MiB batches.
  const CONVS = 2000;
  const MSGS = 8;
  const body = (c: number, m: number) => `conversation ${c} message ${m} `.padEnd(1000, 'lorem ipsum ');
  const t0 = Date.parse('2026-01-05T08:00:00Z');
  const importFile = join(tempDir('sw-import-crash-file-'), 'import.json');
  writeFileSync(importFile, JSON.stringify({
    conversations: Array.from({ length: CONVS }, (_, c) => ({
      externalId: `imp-${c}`, subject: `Imported ${c}`, customer: { email: `c${c % 50}@example.com` }, createdAt: new Date(t0 + c * 60_000).toISOString(),
      messages: Array.from({ length: MSGS }, (_, m) => ({ role: m % 2 ? 'agent' : 'user', body: body(c, m), createdAt: new Date(t0 + c * 60_000 + m * 1000).toISOString() })),
    })),
  }));
  const fileBytes = statSync(importFile).size;
  const seed = Date.now() % 1_000_000;
  t.diagnostic(`seed ${seed}; import file ${fileBytes} bytes`);
  const rand = prng(seed);
  // Where the kill lands, as a share of the import file's size written to the log after the
  // frame's begin marker (the frame is larger than the file): early, middle, late, and after
  // the CLI's answer. A kill aimed inside the frame that lands past it (the test process was
  // not scheduled while the frame was written) is tried again, up to 3 times.
  const rounds = [0.02, 0.2 + rand() * 0.3, 0.6 + rand() * 0.3, Infinity];
  const landed: string[] = [];
  const INSIDE = 'inside the frame';
  for (const [round, share] of rounds.entries()) {
    for (let attempt = 0; attempt < 3; attempt++) {
      const where = await killDuringImport(round, share);
      if (share === Infinity || where === INSIDE) break;
    }
  }
  for (const l of landed) t.diagnostic(l);
  assert.ok(landed.some((l) => l.includes(INSIDE)), 'at least one kill landed inside the frame');

  /** One round: a fresh server, writes, the import, the kill; then the restarted server checked. Returns where the kill landed. */
  async function killDuringImport(round: number, share: number): Promise<string> {
    const dataDir = tempDir('sw-import-crash-');
    const srv = await startServer({ dataDir, env });
    let cliAnswer: Awaited<ReturnType<typeof runCli>> | undefined;
    const acked: Array<{ externalId: string; id: string }> = [];
    let key = '';
    let log = '';
    try {
      key = await srv.waitForKey();
      const list = await runCli<{ workspaces: Array<{ id: string }> }>(dataDir, ['workspace', 'list']);
      assert.equal(list.code, 0, list.stderr);
      log = join(dataDir, 'workspaces', `${list.json.workspaces[0].id}.log`);
      const post = async (externalId: string) => {
        const r = await call<ConversationAnswer>(srv.url, 'POST', '/api/v1/conversations', { key, body: { externalId, subject: externalId, customer: { email: 'w@example.com' } } });
        assert.equal(r.status, 201, r.text);
        acked.push({ externalId, id: r.body.conversation.id });
      };
      // Acknowledged before the import…
      await Promise.all(Array.from({ length: 20 }, (_, i) => post(`r${round}-before-${i}`)));
      // …and during it: a few lanes of writes until the kill.
      let stop = false;
      let n = 0;
      const lanes = Promise.all(Array.from({ length: 6 }, async () => {
        while (!stop) {
          try { await post(`r${round}-during-${n++}`); } catch (e) { if (e instanceof assert.AssertionError) throw e; stop = true; }
        }
      }));
      let cliDone = false;
      const cli = runCli(dataDir, ['import', '--workspace', list.json.workspaces[0].id, importFile], { timeoutMs: 300_000 }).then((r) => { cliDone = true; cliAnswer = r; });
      // Watch the log for the frame's begin marker (the lanes' lines come and go meanwhile),
      // then spin on its size without yielding — a turn of the event loop would let the
      // frame's writes run far past the point — and kill the server the moment it is passed.
      let fd = openSync(log, 'r');
      try {
        let read = statSync(log).size;
        let frameAt = -1;
        const BEGIN = Buffer.from('{"frame":"begin"');
        while (!cliDone && frameAt < 0) {
          // A compaction may replace the log meanwhile (the lanes' first 1,000 operations start
          // one, docs/storage.md#compaction): follow the new file, from its start.
          if (statSync(log).ino !== fstatSync(fd).ino) { closeSync(fd); fd = openSync(log, 'r'); read = 0; }
          const size = statSync(log).size;
          if (size > read) {
            const from = Math.max(0, read - BEGIN.length);
            const chunk = Buffer.alloc(size - from);
            readSync(fd, chunk, 0, chunk.length, from);
            const at = chunk.indexOf(BEGIN);
            if (at >= 0) frameAt = from + at;
            read = size;
          }
          if (frameAt < 0) await new Promise((r) => setTimeout(r, 1));
        }
        if (frameAt >= 0 && share !== Infinity) {
          const threshold = frameAt + Math.floor(share * fileBytes);
          const deadline = Date.now() + 60_000;
          while (statSync(log).size < threshold && Date.now() < deadline);
          srv.proc.kill('SIGKILL');
        } else if (share !== Infinity) srv.proc.kill('SIGKILL'); // the frame was never seen: the kill lands after the import
      } finally { closeSync(fd); }
      await cli;
      if (share === Infinity) {
        assert.equal(cliAnswer!.code, 0, `the import was refused: ${cliAnswer!.stderr}`);
        srv.proc.kill('SIGKILL');
      }
      assert.deepEqual(await srv.exited, { code: null, signal: 'SIGKILL' });
      stop = true;
      await lanes;
    } finally { await srv.stop('SIGKILL'); }

    // What the kill left in the file: the frame not begun, cut inside, or whole. (A compaction
    // may have run meanwhile — the first 1,000 operations of a log without a block start one —
    // copying the frame's lines, whole or partly written, after its snapshot block.)
    const text = readFileSync(log, 'utf8');
    const markers = text.split('\n').slice(0, -1).filter((l) => l.startsWith('{"frame"', 9)).map((l) => (JSON.parse(l.slice(9)) as { frame: string }).frame);
    const where = markers.includes('commit') ? 'after the commit marker' : markers.includes('begin') ? INSIDE : 'before the frame';
    const imported = cliAnswer?.code === 0;
    landed.push(`round ${round}: killed ${where}${imported ? ', after the CLI\'s answer' : ''} (log ${text.length} bytes)`);

    const again = await startServer({ dataDir, env });
    try {
      const all = await listAll(again.url, key, '/api/v1/conversations', 'conversations');
      const byExt = new Map(all.map((c) => [c.externalId as string, c]));
      for (const a of acked) assert.equal(byExt.get(a.externalId)?.id, a.id, `round ${round}: acknowledged conversation ${a.externalId} lost`);
      const mine = all.filter((c) => String(c.externalId).startsWith('imp-'));
      if (imported || where === 'after the commit marker') assert.equal(mine.length, CONVS, `round ${round}: the import is whole`);
      else if (where === INSIDE) assert.equal(mine.length, 0, `round ${round}: none of the unfinished import`);
      else assert.ok(mine.length === 0 || mine.length === CONVS, `round ${round}: the import all there or not at all (${mine.length})`);
      if (mine.length > 0) {
        // Each conversation was written once, with its last value; its messages are all there.
        for (const c of [0, 1, Math.floor(rand() * CONVS), CONVS - 1]) {
          const conv = byExt.get(`imp-${c}`)!;
          assert.equal(conv.preview, body(c, MSGS - 1).slice(0, 160), `round ${round}: preview of imp-${c}`);
          assert.equal(conv.lastMessageAt, new Date(t0 + c * 60_000 + (MSGS - 1) * 1000).toISOString());
          const msgs = await listAll(again.url, key, `/api/v1/conversations/${conv.id}/messages`, 'messages');
          assert.deepEqual(msgs.map((m) => m.body), Array.from({ length: MSGS }, (_, m) => body(c, m)), `round ${round}: messages of imp-${c}`);
        }
      }
      const setAside = readdirSync(join(dataDir, 'workspaces')).filter((f) => f.includes('.corrupt-'));
      if (where === INSIDE) assert.equal(setAside.length, 1, `round ${round}: the unfinished frame is set aside`);
      // The log goes on after the cut.
      const r = await call(again.url, 'POST', '/api/v1/conversations', { key, body: { subject: 'after', customer: { email: 'a@example.com' } } });
      assert.equal(r.status, 201, r.text);
    } finally { await again.stop('SIGKILL'); }
    return where;
  }
});
