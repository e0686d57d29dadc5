/**
 * Starting a worker thread from a module of this project, compiled or not: compiled, the
 * module is `name.js` beside the caller; under tsx (the test suite) it is `name.ts`, and a
 * worker thread does not inherit tsx's loader, so a two-line bootstrap registers it first.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
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

/**
 * Lowers the scheduling priority of the calling thread to nice value `nice` (0 to 19; higher
 * yields more), leaving the process's other threads as they are: on Linux a thread is a task
 * with an id of its own, which `/proc/thread-self` names and `os.setPriority` accepts. Returns
 * whether it was done: false where there is no such link (not Linux), on the main thread (whose
 * task id is the process's: lowering it would lower the API thread), or when refused.
 */
export function lowerThreadPriority(nice: number): boolean {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isSafeInteger(tid) || tid <= 0 || tid === process.pid) return false;
    setPriority(tid, nice);
    return true;
  } catch { return false; }
}
