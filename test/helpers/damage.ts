/** Damaging a log on purpose, for the corruption tests. */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';

/** Changes one byte of the log line holding `marker`; returns its 1-based line number and byte offset. */
export function damageLine(file: string, marker: string): { line: number; offset: number } {
  const buf = readFileSync(file);
  const at = buf.indexOf(marker);
  assert.ok(at > 0, `${marker} is in ${file}`);
  const offset = buf.lastIndexOf(0x0a, at) + 1;
  let line = 1;
  for (let i = buf.indexOf(0x0a); i !== -1 && i < offset; i = buf.indexOf(0x0a, i + 1)) line++;
  buf[at] = 'Z'.charCodeAt(0); // same length, still valid JSON, wrong checksum
  writeFileSync(file, buf);
  return { line, offset };
}

