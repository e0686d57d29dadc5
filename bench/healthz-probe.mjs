// A separate process that polls GET /healthz every ~10 ms (one keep-alive connection). Over IPC:
// 'report' answers { count, p50, p99, max } in milliseconds since the last report (how long the
// server kept a trivial request waiting) and starts a new window; 'exit' ends it. Plain
// JavaScript, so it starts without a loader.
import http from 'node:http';

const url = process.argv[2];
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const lat = [];
let running = true;

function probe() {
  if (!running) return;
  const t0 = performance.now();
  inflightSince = t0;
  const req = http.get(`${url}/healthz`, { agent }, (res) => {
    res.resume();
    res.on('end', () => { inflightSince = 0; lat.push(performance.now() - t0); setTimeout(probe, 10); });
  });
  req.on('error', () => { inflightSince = 0; setTimeout(probe, 10); });
}

let inflightSince = 0;
process.on('message', (m) => {
  if (m === 'exit') { running = false; process.exit(0); }
  if (m !== 'report') return;
  const s = lat.splice(0).sort((a, b) => a - b);
  // A probe still waiting counts with the time it has waited so far.
  if (inflightSince) s.push(performance.now() - inflightSince), s.sort((a, b) => a - b);
  const q = (p) => (s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : 0);
  process.send({ count: s.length, p50: q(0.5), p99: q(0.99), max: s.length ? s[s.length - 1] : 0 });
});
probe();
process.send('ready');
