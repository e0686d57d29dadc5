/**
 * Reading `/proc/<pid>/stat` and `/proc/<pid>/task/<tid>/stat` (proc(5)): shared by the bench's
 * process handle (bench/run.ts `Proc`) and bench/sibling.ts.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';

/** Clock ticks a second, the unit of the CPU times in `/proc` (`getconf CLK_TCK`; 100 when it cannot be asked). */
export const CLK_TCK = (() => { try { return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100; } catch { return 100; } })();

/** The fields of a `/proc/…/stat` file after the command name (state first), or null when it cannot be read (the process is gone). */
export function statFields(file: string): string[] | null {
  try {
    const stat = fs.readFileSync(file, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch { return null; }
}

/** User + system CPU seconds of the process or thread whose `stat` file this is; NaN when it cannot be read. */
export function statCpuSeconds(file: string): number {
  const f = statFields(file);
  return f === null ? NaN : (Number(f[11]) + Number(f[12])) / CLK_TCK;
}

/** System (kernel) CPU seconds of the process or thread whose `stat` file this is; NaN when it cannot be read. */
export function statSystemSeconds(file: string): number {
  const f = statFields(file);
  return f === null ? NaN : Number(f[12]) / CLK_TCK;
}
