/**
 * CPU time of the YAML parser on the largest YAML of the corpus (the OpenAI OpenAPI description,
 * ~0.3 MB) and on a ~3 MB stream of ten copies of it as separate documents, to check that the
 * parser stays linear. Runs on its own:
 *
 *   node --import tsx bench/yaml-parse.ts [--runs N]
 *
 * Each input is parsed 5 times to warm up, then N times (default 40); the median and the
 * minimum of the process's CPU time per parse are printed (CPU, not wall clock, so time the
 * process was not scheduled on a shared machine does not count).
 */
import { readFileSync } from 'node:fs';
import { parseYamlAll } from '../src/ingest/parsers/yaml.js';

const runsArg = process.argv.indexOf('--runs');
const runs = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 40;
const text = readFileSync(new URL('../test/fixtures/corpus/openapi/openai-openapi-2024-01.yaml', import.meta.url), 'utf8');
const inputs: Array<[string, string, number]> = [
  ['openai-openapi-2024-01.yaml', text, 1],
  ['10 copies as documents', Array(10).fill(`---\n${text}`).join('\n'), 10],
];

for (const [name, input, docs] of inputs) {
  const once = (): number => {
    const c0 = process.cpuUsage();
    const n = parseYamlAll(input).length;
    const c = process.cpuUsage(c0);
    if (n !== docs) throw new Error(`${name}: ${n} documents, expected ${docs}`);
    return (c.user + c.system) / 1000;
  };
  for (let i = 0; i < 5; i++) once();
  const ms = Array.from({ length: runs }, once).sort((a, b) => a - b);
  const mb = Buffer.byteLength(input) / 1e6;
  console.log(`${name} (${mb.toFixed(2)} MB): median ${ms[runs >> 1].toFixed(2)} ms, min ${ms[0].toFixed(2)} ms CPU per parse`);
}
