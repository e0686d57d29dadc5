/**
 * `npm run eval:answers`: the quality of agents' extractive answers (docs/api.md#answers) on real API descriptions
 * (test/fixtures/corpus, licences in its SOURCES.md) with the questions of bench/answers/questions.json. Over HTTP on a
 * test server: each description a source in its own workspace, each question a new conversation. Prints the share of
 * answerable questions whose top citation is the expected endpoint or section, and the share of unanswerable ones that
 * come back `uncertain` or `no_sources`, and writes them to the `answers` section of bench/RESULTS.md (`--out FILE`
 * elsewhere, `--no-write` not at all). `--verbose` lists every question with its coverage-driven outcome.
 */
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import { join } from 'node:path';
import { machineLine, writeResults } from './results.js';
import { startTestServer, type Space } from '../test/helpers/server.js';

interface QuestionSet { file: string; questions: Array<{ q: string; expect: string }>; unanswerable: string[] }
const root = join(import.meta.dirname, '..');
const sets = (JSON.parse(readFileSync(join(root, 'bench/answers/questions.json'), 'utf8')) as { sets: QuestionSet[] })
  .sets;
const verbose = process.argv.includes('--verbose');

interface Citation { method: string | null; path: string | null; title: string; score: number }
interface AnswerBody { answer: { outcome: string; citations: Citation[] } }

async function ask(w: Space, question: string): Promise<AnswerBody['answer']> {
  const c = await w.call<{ conversation: { id: string } }>('POST', '/api/v1/conversations', { body: {
    subject: 'Question', customer: { email: 'customer@example.com' } } });
  if (c.status !== 201) throw new Error(`create conversation: ${c.status} ${c.text}`);
  const id = c.body.conversation.id;
  const m = await w.call('POST', `/api/v1/conversations/${id}/messages`, { body: { role: 'user', body: question } });
  if (m.status !== 201) throw new Error(`create message: ${m.status} ${m.text}`);
  const a = await w.call<AnswerBody>('POST', `/api/v1/conversations/${id}/answers`, { body: {} });
  if (a.status !== 201) throw new Error(`answer: ${a.status} ${a.text}`);
  return a.body.answer;
}

const srv = await startTestServer({ env: { RATE_LIMIT_BURST: '1000000', RATE_LIMIT_PER_MINUTE: '1000000' } });
let answerable = 0, right = 0, rightAnswered = 0, unanswerable = 0, held = 0;
const misses: string[] = [];
try {
  for (const set of sets) {
    const w = await srv.space();
    const content = readFileSync(join(root, 'test/fixtures/corpus', set.file), 'utf8');
    const s = await w.call('POST', '/api/v1/sources', { body: { content, name: set.file } });
    if (s.status !== 201) throw new Error(`source ${set.file}: ${s.status} ${s.text.slice(0, 300)}`);
    const ag = await w.call('POST', '/api/v1/agents', { body: { name: 'Eval' } });
    if (ag.status !== 201) throw new Error(`agent: ${ag.status} ${ag.text}`);
    for (const { q, expect } of set.questions) {
      const a = await ask(w, q);
      const top = a.citations[0];
      const got = top ? (top.method !== null ? `${top.method} ${top.path}` : top.title) : '(none)';
      answerable++;
      const ok = got === expect;
      if (ok) { right++; if (a.outcome === 'answered') rightAnswered++; }
      else misses.push(`  ${set.file}: "${q}" → ${got} (expected ${expect})`);
      if (verbose) console.log(`${ok ? 'ok  ' : 'MISS'} ${a.outcome.padEnd(10)} ${q} → ${got}`);
    }
    for (const q of set.unanswerable) {
      const a = await ask(w, q);
      unanswerable++;
      if (a.outcome !== 'answered') held++;
      else misses.push(`  ${set.file}: unanswerable "${q}" → answered from ${a.citations[0]?.title}`);
      if (verbose) console.log(`${a.outcome === 'answered' ? 'MISS' : 'ok  '} ${a.outcome.padEnd(10)} ${q}`);
    }
  }
} finally {
  await srv.close();
}
const pct = (n: number, d: number): string => `${(100 * n / d).toFixed(1)} %`;
console.log(`descriptions: ${sets.length}; questions: ${answerable} answerable, ${unanswerable} unanswerable`);
console.log(`top citation right (answerable): ${right}/${answerable} = ${pct(right, answerable)} (target ≥ 85 %)`);
console.log(`  … and outcome answered: ${rightAnswered}/${answerable} = ${pct(rightAnswered, answerable)}`);
console.log(`unanswerable → uncertain/no_sources: ${held}/${unanswerable} = ${pct(held, unanswerable)} `
  + '(target ≥ 90 %)');
if (misses.length > 0) console.log(`misses:\n${misses.join('\n')}`);

if (!process.argv.includes('--no-write')) {
  const at = process.argv.indexOf('--out');
  const out = at > 0 ? process.argv[at + 1] : join(root, 'bench/RESULTS.md');
  let commit = 'unknown commit';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: root, encoding: 'utf8' })
      .split('\n').filter(Boolean).length;
    if (dirty) commit += ` + ${dirty} uncommitted file(s) in src/`;
  } catch { /* not a git checkout */ }
  const cpu = os.cpus();
  const met = (ok: boolean) => (ok ? '**met**' : '**not met**');
  writeResults(out, [{
    key: 'answers',
    stamp: { date: new Date().toISOString(), commit,
      machine: machineLine(cpu[0]?.model?.trim() ?? 'unknown CPU', cpu.length, os.totalmem(),
        `${os.type()} ${os.release()}`, process.version),
      command: '`npm run eval:answers` (extractive answers, no model)' },
    rows: [
      { scenario: `answerable questions (${answerable}, over ${sets.length} API descriptions): top citation right`,
        figure: `${right}/${answerable} = ${pct(right, answerable)} (answered as well: ${pct(rightAnswered,
          answerable)})`, target: '≥ 85 %', status: met(right / answerable >= 0.85) },
      { scenario: `questions the sources cannot answer (${unanswerable}): uncertain or no_sources`,
        figure: `${held}/${unanswerable} = ${pct(held, unanswerable)}`, target: '≥ 90 %',
        status: met(held / unanswerable >= 0.9) },
    ],
    notes: ['Agents\' extractive answers on the real descriptions of test/fixtures/corpus with the questions of '
      + 'bench/answers/questions.json; each question a new conversation over HTTP.'],
    runs: misses,
  }]);
  console.log(`written to ${out}`);
}
