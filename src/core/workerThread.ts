/**
 * Starting a worker thread from a module of this project: compiled, `name.js` beside the caller; under tsx, `name.ts`
 * behind a bootstrap registering tsx's loader, which a worker does not inherit.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** A worker running module `name` of `callerUrl`'s folder (`import.meta.url`); unref'd. */
export function startWorker(callerUrl: string, name: string, options: WorkerOptions = {}): Worker {
  const ts = callerUrl.endsWith('.ts');
  const url = new URL(`./${name}${ts ? '.ts' : '.js'}`, callerUrl);
  const w = ts
    ? new Worker(`import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(url.href)}); });`,
      { ...options, eval: true })
    : new Worker(url, options);
  w.unref();
  return w;
}
