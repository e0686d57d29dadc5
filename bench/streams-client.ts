/**
 * The stream side of `npm run bench -- --only streams` (bench/streams.ts), a forked child: opens Server-Sent Events
 * streams over raw sockets (`GET /api/v1/events/stream`), reads each incrementally and notes, per stream, when each
 * event id arrived (performance.timeOrigin + now(), ms: one clock with the parent). Commands over IPC:
 * `{op:'open', port, n, headers, type}` → `{opened, failed}`; `{op:'receipts', id}` → the arrival times of event `id`
 * on every stream; `{op:'close'}` destroys every socket.
 */
import * as net from 'node:net';

interface Open { op: 'open'; port: number; n: number; headers: Record<string, string>; type: string }
type Command = Open | { op: 'receipts'; id: string } | { op: 'close' };

const sockets: net.Socket[] = [];
/** Event id → arrival times (epoch ms), one per stream it reached. */
const arrivals = new Map<string, number[]>();
const now = () => performance.timeOrigin + performance.now();

/** Opens one stream; resolves once its answer head (200) has arrived, rejects on another status or an error. */
function openOne(o: Open): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect(o.port, '127.0.0.1');
    sockets.push(s);
    let head = true;
    let text = '';
    s.setEncoding('utf8');
    s.on('error', reject);
    s.on('data', (chunk: string) => {
      text += chunk;
      if (head) {
        const end = text.indexOf('\r\n\r\n');
        if (end === -1) return;
        const status = text.slice(9, 12);
        if (status !== '200') { reject(new Error(`status ${status}`)); s.destroy(); return; }
        head = false;
        text = text.slice(end + 4);
        resolve();
      }
      // Chunked framing aside, an `id:` line starts a line of its own: enough to see which events arrived.
      let nl: number;
      while ((nl = text.indexOf('\n')) !== -1) {
        const line = text.slice(0, nl);
        text = text.slice(nl + 1);
        if (line.startsWith('id: ')) {
          const id = line.slice(4).trim();
          let a = arrivals.get(id);
          if (!a) arrivals.set(id, a = []);
          a.push(now());
        }
      }
    });
    const hdrs = Object.entries(o.headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    s.write(`GET /api/v1/events/stream?type=${o.type} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n`
      + `${hdrs}\r\n`);
  });
}

process.on('message', async (m: Command) => {
  if (m.op === 'open') {
    let opened = 0;
    let failed = 0;
    for (let i = 0; i < m.n; i += 200) {
      const batch = Array.from({ length: Math.min(200, m.n - i) }, () => openOne(m));
      for (const r of await Promise.allSettled(batch)) if (r.status === 'fulfilled') opened++; else failed++;
    }
    process.send!({ opened, failed });
  } else if (m.op === 'receipts') {
    process.send!({ times: arrivals.get(m.id) ?? [] });
    arrivals.delete(m.id);
  } else {
    for (const s of sockets) s.destroy();
    sockets.length = 0;
    process.send!({ closed: true });
  }
});
