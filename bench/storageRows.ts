/**
 * The `storage` rows of bench/reliability.ts (heavier versions of test/quarantine.test.ts,
 * test/datadir.test.ts and the tmpfs test of test/faults.test.ts):
 *  - a corrupt line at a random place in one of 5 workspaces' logs, then the repair
 *  - a LOCK naming a live unrelated process (a reused pid), and one naming a running server
 *  - a real full disk (a small tmpfs filled to the last byte), then space freed
 */
import { spawn, execFileSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer } from '../test/helpers/server.js';
import { runServerToExit, startServer as startChild, tempDir } from '../test/helpers/child.js';
import { mulberry32 } from '../test/helpers/prng.js';
import type { ConversationAnswer, ConversationList, MessageList } from '../test/helpers/answers.js';

type RowFn = (id: string, what: string, fn: () => Promise<{ runs: string; result: string; ok?: boolean }>) => Promise<void>;
type Check = (cond: unknown, msg: string) => asserts cond;

const STORAGE_FAILED = { code: 'storage_failed', error: "This workspace's data could not be read; see the server log." };
const STORAGE_FULL = { code: 'storage_full', error: 'The server is out of disk space and saved nothing; try again later.' };
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const fmt = (n: number) => n.toLocaleString('en-US');

/** Start offsets of the complete lines of `buf`. */
function lineStarts(buf: Buffer): number[] {
  const out: number[] = [];
  for (let at = 0; at < buf.length; at = buf.indexOf(0x0a, at) + 1) { out.push(at); if (buf.indexOf(0x0a, at) === -1) break; }
  return out;
}

export async function storageRows(row: RowFn, check: Check, quick: boolean): Promise<void> {
  const runs = quick ? 3 : 20;

  await row('storage', 'A corrupt line at a random place in one of 5 workspaces\' logs (20 conversations each), restart, then `repair --workspace`', async () => {
    const rand = mulberry32(4242);
    let refused = 0, servedOthers = 0, droppedLines = 0, keptRecords = 0;
    for (let run = 0; run < runs; run++) {
      const first = await startTestServer();
      const spaces = [{ workspaceId: first.workspaceId, key: first.key }];
      for (let i = 1; i < 5; i++) spaces.push(await first.newWorkspace(`W${i}`));
      const ids = new Map<string, string[]>();
      for (const w of spaces) {
        ids.set(w.workspaceId, []);
        for (let c = 0; c < 20; c++) {
          const r = await first.call<ConversationAnswer>('POST', '/api/v1/conversations', { key: w.key, body: { subject: `c${c}`, customer: { email: 'a@example.com' } } });
          check(r.status === 201, `setup ${r.status}`);
          ids.get(w.workspaceId)!.push(r.body.conversation.id);
        }
      }
      await first.close();
      const victim = spaces[Math.floor(rand() * spaces.length)];
      const log = join(first.dataDir, 'workspaces', `${victim.workspaceId}.log`);
      const buf = readFileSync(log);
      const starts = lineStarts(buf);
      const k = Math.floor(rand() * starts.length);
      const at = starts[k] + 9 + Math.floor(rand() * ((starts[k + 1] ?? buf.length) - starts[k] - 10));
      buf[at] ^= 0x01;
      writeFileSync(log, buf);
      const srv = await startTestServer({ dataDir: first.dataDir });
      try {
        const list = (key: string) => srv.call<ConversationList>('GET', '/api/v1/conversations?limit=100', { key });
        for (const w of spaces) {
          const r = await list(w.key);
          if (w === victim) { check(r.status === 503 && same(r.body, STORAGE_FAILED), `the damaged workspace answered ${r.status} ${r.text}`); refused++; continue; }
          check(r.status === 200 && same(r.body.conversations.map((c: { id: string }) => c.id).sort(), [...ids.get(w.workspaceId)!].sort()), `workspace ${w.workspaceId} answered ${r.status}`);
          servedOthers++;
        }
        check((await srv.call('GET', '/healthz', { key: null })).status === 200, '/healthz');
        const out = await srv.admin.execute('workspace.repair', { workspace: victim.workspaceId }) as { droppedLines: number; keptBytes: number; damagedCopy: string };
        check(out.keptBytes === starts[k] && out.droppedLines === starts.length - k, `repair cut at ${out.keptBytes} dropping ${out.droppedLines}, expected ${starts[k]} and ${starts.length - k}`);
        check(same(readFileSync(out.damagedCopy), buf), 'the copy differs from the damaged log');
        droppedLines += out.droppedLines;
        // Exactly the conversations created on the lines before the bad one are served again.
        const before = new Set<string>();
        for (let i = 0; i < k; i++) for (const op of JSON.parse(buf.subarray(starts[i] + 9, starts[i + 1] - 1).toString('utf8'))) if (op[1] === 'conversation') before.add(op[2]);
        const r = await list(victim.key);
        check(r.status === 200 && same(r.body.conversations.map((c: { id: string }) => c.id).sort(), [...before].sort()), `after the repair: ${r.status} ${r.body?.conversations?.length} of ${before.size}`);
        keptRecords += before.size;
      } finally { await srv.close(); }
    }
    return {
      runs: `${runs}/${runs}`,
      result: `the server started every time; the damaged workspace answered 503 \`storage_failed\` (${refused}/${runs}), the other 4 served all their records (${servedOthers}/${runs * 4}), \`/healthz\` 200; ` +
        `the repair kept a byte-identical copy, cut exactly at the bad line (${fmt(droppedLines)} lines dropped in all) and the workspace served exactly the ${fmt(keptRecords)} conversations written before it, without a restart`,
    };
  });

  await row('storage', 'A `LOCK` naming a live unrelated process (a reused pid: another start time, or the pid-only format), and one naming a running server', async () => {
    const sleeper = spawn('sleep', ['600'], { stdio: 'ignore' });
    await new Promise((r) => sleeper.once('spawn', r));
    let startedOk = 0, refused = 0;
    try {
      const start = readFileSync(`/proc/${sleeper.pid}/stat`, 'latin1').split(') ')[1].split(' ')[19];
      for (let run = 0; run < runs; run++) {
        const dataDir = tempDir('sw-rel-lock-');
        writeFileSync(join(dataDir, 'LOCK'), run % 2 ? `${sleeper.pid}\n` : `${sleeper.pid}\nstarttime ${Number(start) + 1 + run}\n`);
        const srv = await startChild({ dataDir });
        try {
          startedOk++;
          const second = await runServerToExit({ dataDir });
          check(second.code === 2 && second.stderr.includes(`in use by process ${srv.pid}`), `a second server on a running one: ${second.code} ${second.stderr}`);
          refused++;
        } finally { await srv.stop(); }
      }
    } finally { sleeper.kill('SIGKILL'); }
    return { runs: `${runs}/${runs}`, result: `the server started over the stale LOCK ${startedOk}/${runs} times; a second server on the running one exited 2 naming its pid ${refused}/${runs} times` };
  });

  await row('storage', 'A real full disk: a 4 MiB tmpfs filled to the last byte under a server (SYNC=always), then the filler deleted', async () => {
    let full = 0, reads = 0, resumed = 0;
    for (let run = 0; run < runs; run++) {
      const mnt = tempDir('sw-rel-full-');
      try { execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m,mode=0755', 'tmpfs', mnt], { stdio: 'ignore' }); } catch {
        return { runs: '—', result: 'skipped: this machine does not allow mounting a tmpfs', ok: true };
      }
      try {
        const srv = await startTestServer({ dataDir: join(mnt, 'data'), env: { SYNC: 'always' } });
        try {
          const a = await srv.call<ConversationAnswer>('POST', '/api/v1/conversations', { body: { subject: 'before', customer: { email: 'a@example.com' } } });
          check(a.status === 201, `setup ${a.status}`);
          const fd = openSync(join(mnt, 'filler'), 'w');
          try { for (;;) writeSync(fd, Buffer.alloc(65536, 1)); } catch { /* full */ }
          try { for (;;) writeSync(fd, Buffer.alloc(1, 1)); } catch { /* to the last byte */ }
          closeSync(fd);
          const path = `/api/v1/conversations/${a.body.conversation.id}/messages`;
          const body = { role: 'user', body: 'x'.repeat(10_000) };
          for (let i = 0; i < 10; i++) {
            const w = await srv.call('POST', path, { body });
            check(w.status === 503 && same(w.body, STORAGE_FULL) && w.headers.get('retry-after') === '30', `a write on the full disk answered ${w.status} ${w.text}`);
            full++;
            const g = await srv.call<MessageList>('GET', path);
            check(g.status === 200 && g.body.messages.length === 0, `a read on the full disk answered ${g.status}`);
            reads++;
          }
          unlinkSync(join(mnt, 'filler'));
          const w = await srv.call('POST', path, { body });
          check(w.status === 201, `the write after freeing space answered ${w.status}`);
          resumed++;
        } finally { await srv.close(); }
        const again = await startTestServer({ dataDir: join(mnt, 'data') });
        try { check(again.store.workspace(again.store.system.table('workspace').keys().next().value!)!.db.replay.tornTailSavedTo === undefined, 'a torn tail after the restart'); } finally { await again.close(); }
      } finally { execFileSync('umount', ['-l', mnt], { stdio: 'ignore' }); }
    }
    return { runs: `${runs}/${runs}`, result: `${fmt(full)} writes answered 503 \`storage_full\` with \`Retry-After: 30\`, ${fmt(reads)} reads 200 meanwhile; the first write after the space was freed 201 (${resumed}/${runs}, no restart); the log replays with no torn tail` };
  });
}
