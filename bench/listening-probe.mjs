// Preloaded into our server by bench/run.ts (NODE_OPTIONS=--import) when it runs with
// LOG_LEVEL=warn or error — the access log off, e.g. the reads scenario's "ours without the
// access log" — since those levels also hide the `listening` line the bench waits for. Once
// the first HTTP server listens on a TCP port, it polls GET /healthz on it until a 200 (the
// server answers only once its data is open), then prints the same `{"msg":"listening",
// "port":…}` line on stdout. Nothing after that: no cost per request. Plain JavaScript, so it
// needs no loader. (In the start-up scenario, the time to that line includes up to one 20 ms
// poll interval.)
import http from 'node:http';
import net from 'node:net';

const listen = net.Server.prototype.listen;
let seen = false;
net.Server.prototype.listen = function (...args) {
  if (!seen && this instanceof http.Server) {
    seen = true;
    this.once('listening', () => {
      const a = this.address();
      if (!a || typeof a !== 'object') return;
      const poll = () => {
        http.get({ host: '127.0.0.1', port: a.port, path: '/healthz', agent: false }, (res) => {
          res.resume();
          if (res.statusCode === 200) process.stdout.write(`${JSON.stringify({ msg: 'listening', port: a.port, by: 'bench/listening-probe.mjs' })}\n`);
          else setTimeout(poll, 20);
        }).on('error', () => setTimeout(poll, 20));
      };
      poll();
    });
  }
  return listen.apply(this, args);
};
