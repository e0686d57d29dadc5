/**
 * The text of an answer (docs/api.md#answers): extractive without a model (the best lines of each passage, quoted,
 * numbered as their citations), or a model's reply over numbered passages (docs/configuration.md#agent-model), whose
 * `[n]` marks are its citations. The outcome thresholds, calibrated on `npm run eval:answers`, are here, in one place.
 */
import { tokenize } from '../../search/tokenize.js';
import type { AgentLlmConfig } from '../../core/config.js';
import type { Passage, Retrieval } from './retrieve.js';
import type { AnswerOutcome } from './model.js';

/**
 * The least share (by idf) of the question's terms the best passage must hold for an extractive answer to be
 * `answered`; below it the answer is `uncertain`. Calibrated on bench/eval-answers.ts (docs/decisions.md).
 */
export const ANSWERED_MIN_COVERAGE = 0.35;

export const UNCERTAIN_TEXT = 'I could not find a confident answer to this in the documentation; a person will '
  + 'follow up.';
export const NO_SOURCES_TEXT = 'The documentation has nothing on this; a person will follow up.';

/** The outcome of an extractive answer from what retrieval found. */
export function outcomeOf(r: Retrieval): AnswerOutcome {
  if (r.passages.length === 0) return 'no_sources';
  return r.coverage >= ANSWERED_MIN_COVERAGE ? 'answered' : 'uncertain';
}

const label = (p: Passage): string => p.method !== null ? `${p.title} (${p.method} ${p.path})` : p.title;

/** The lines of `p` holding most of the question's terms (at most 3, in their order, each ≤ 300 characters). */
function excerpt(p: Passage, terms: Set<string>): string[] {
  const lines = p.text.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  const scored = lines.map((l, i) => ({ i, n: tokenize(l).filter((t) => terms.has(t)).length }));
  const best = scored.filter((x) => x.n > 0).sort((a, b) => b.n - a.n || a.i - b.i).slice(0, 3).map((x) => x.i);
  const keep = best.length > 0 ? best.sort((a, b) => a - b) : [0, 1].filter((i) => i < lines.length);
  return keep.map((i) => lines[i].length > 300 ? `${lines[i].slice(0, 299)}…` : lines[i]);
}

/** The extractive text of an answer: each passage quoted under its number, or the uncertain / no-sources line. */
export function extractiveText(outcome: AnswerOutcome, r: Retrieval, question: string): string {
  if (outcome === 'no_sources') return NO_SOURCES_TEXT;
  if (outcome === 'uncertain') return `${UNCERTAIN_TEXT}\n\nPossibly related:\n${r.passages.map((p, i) =>
    `[${i + 1}] ${label(p)}`).join('\n')}`;
  const terms = new Set(tokenize(question));
  return `From the documentation:\n\n${r.passages.map((p, i) =>
    `[${i + 1}] ${label(p)}\n${excerpt(p, terms).map((l) => `> ${l}`).join('\n')}`).join('\n\n')}`;
}

/** One chat message of the protocol. */
export interface ChatMessage { role: 'system' | 'user' | 'assistant'; content: string }

/** The prompt: instructions, numbered passages, the conversation (oldest first). Every part is already redacted. */
export function promptOf(instructions: string, passages: Passage[], transcript: Array<{ customer: boolean;
  body: string }>): ChatMessage[] {
  const system = 'You answer customers of an API using only the numbered passages below. Cite every passage you '
    + 'use by its number in square brackets, such as [1]. If the passages do not answer the question, reply '
    + 'with exactly UNCERTAIN and nothing else.' + (instructions === '' ? '' : `\n\nInstructions:\n${instructions}`);
  const numbered = passages.map((p, i) => `[${i + 1}] ${label(p)}\n${p.text}`).join('\n\n');
  const talk = transcript.map((m) => `${m.customer ? 'Customer' : 'Support'}: ${m.body}`).join('\n');
  return [{ role: 'system', content: system },
    { role: 'user', content: `Passages:\n\n${numbered}\n\nConversation:\n${talk}\n\nAnswer the customer's last `
      + 'message.' }];
}

/** What the model's call gave: its reply, or why there is none. */
export type ModelReply = { ok: true; text: string; refusal: boolean } | { ok: false; reason: 'timeout' | 'error' };

/** The chat-completions URL of `AGENT_LLM_URL`: as given when it ends in `/chat/completions`. */
export function completionsUrl(base: string): string {
  if (/\/chat\/completions$/.test(base)) return base;
  return /\/v1$/.test(base) ? `${base}/chat/completions` : `${base}/v1/chat/completions`;
}

/**
 * Asks the model (plain `fetch`, `timeoutMs` through an AbortSignal). Never throws: a timeout, a network error, a
 * non-2xx status or a reply without text are `{ok:false}`; a `refusal` field or a reply of UNCERTAIN is
 * `refusal: true`.
 */
export async function askModel(cfg: AgentLlmConfig, messages: ChatMessage[]): Promise<ModelReply> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (cfg.apiKey !== null) headers.authorization = `Bearer ${cfg.apiKey}`;
  try {
    const res = await fetch(completionsUrl(cfg.url), { method: 'POST', headers, signal: AbortSignal.timeout(
      cfg.timeoutMs), body: JSON.stringify({ model: cfg.model, messages, temperature: 0 }) });
    if (!res.ok) { await res.body?.cancel(); return { ok: false, reason: 'error' }; }
    const body = await res.json() as { choices?: Array<{ message?: { content?: unknown; refusal?: unknown } }> };
    const msg = body.choices?.[0]?.message;
    const refusal = typeof msg?.refusal === 'string' && msg.refusal !== '';
    const text = typeof msg?.content === 'string' ? msg.content.trim() : '';
    if (!refusal && text === '') return { ok: false, reason: 'error' };
    return { ok: true, text: refusal ? String(msg!.refusal) : text, refusal: refusal || /^UNCERTAIN\b/.test(text) };
  } catch (e) {
    const name = (e as { name?: string }).name;
    return { ok: false, reason: name === 'TimeoutError' || name === 'AbortError' ? 'timeout' : 'error' };
  }
}

/** The passage numbers (1-based) `text` cites that exist, in order of first citation, without repeats. */
export function citedNumbers(text: string, count: number): number[] {
  const out: number[] = [];
  for (const m of text.matchAll(/\[(\d{1,3})\]/g)) {
    const n = Number(m[1]);
    if (n >= 1 && n <= count && !out.includes(n)) out.push(n);
  }
  return out;
}
