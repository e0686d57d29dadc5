// Preloaded into the server by bench/run.ts for the start-up scenarios only
// (`node --expose-gc --import bench/memprobe.mjs dist/server.js`): on SIGUSR2 it runs a full
// GC and prints the server's memory on stderr as one JSON line, so the benchmark can read
// the heap from the outside without any change to src/.
process.on('SIGUSR2', () => {
  globalThis.gc?.();
  const m = process.memoryUsage();
  process.stderr.write(`${JSON.stringify({ benchMemory: { rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers } })}\n`);
});
