/**
 * Starting a worker thread from a module of this project, compiled or not: compiled, the
 * module is `name.js` beside the caller; under tsx (the test suite) it is `name.ts`, and a
 * worker thread does not inherit tsx's loader, so a two-line bootstrap registers it first.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * A worker running the module `name` (without extension) of the folder of `callerUrl`
 * (`import.meta.url` of the caller). The worker is unref'd: it never keeps the process alive.
 */
export function startWorker(callerUrl: string, name: string, options: WorkerOptions = {}): Worker {
  const ts = callerUrl.endsWith('.ts');
  const url = new URL(`./${name}${ts ? '.ts' : '.js'}`, callerUrl);
  const w = ts
    ? new Worker(`import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(url.href)}); });`, { ...options, eval: true })
    : new Worker(url, options);
  w.unref();
  return w;
}
