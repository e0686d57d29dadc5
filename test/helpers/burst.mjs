// A separate process that sends a burst of requests to a server, so that the measuring process's
// event loop runs only the server (test/analytics-scale.test.ts). Forked with IPC: it says 'ready',
// waits for { url, key, steps, concurrency } — steps are { method, path, body? } — sends them
// `concurrency` at a time over keep-alive connections, and answers { statuses, ms } (ms per
// request, in order). Plain JavaScript, so it starts without a loader.
import http from 'node:http';

process.on('message', async (m) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: m.concurrency });
  const statuses = {};
  const ms = new Array(m.steps.length);
  let next = 0;
  const one = (step) => new Promise((resolve, reject) => {
    const body = step.body === undefined ? undefined : JSON.stringify(step.body);
    const headers = { Authorization: `Bearer ${m.key}`, ...(body ? { 'Content-Type': 'application/json' } : {}) };
    const req = http.request(`${m.url}${step.path}`, { method: step.method, agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(body);
  });
  const worker = async () => {
    while (next < m.steps.length) {
      const i = next++;
      const t0 = performance.now();
      const status = await one(m.steps[i]);
      ms[i] = performance.now() - t0;
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: m.concurrency }, worker));
  agent.destroy();
  process.send({ statuses, ms }, () => process.exit(0));
});
process.send('ready');
