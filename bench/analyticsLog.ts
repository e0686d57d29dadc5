/**
 * A large workspace's log written directly (bench/analytics-scale.ts, bench/hostile.ts): conversations over 2026
 * with two messages each, issues, and the days' counters, as the server would have written them.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { encodeLine } from '../src/store/log/log.js';
import { newId } from '../src/core/ids.js';
import { mulberry32 } from '../test/helpers/prng.js';

const STATUSES = ['open', 'waiting', 'solved'] as const;
const CHANNELS = ['api', 'live-chat', 'email', 'discord'] as const;
const STATES = ['new', 'on_you', 'on_customer', 'on_hold', 'closed'] as const;
const PRIORITIES = ['urgent', 'high', 'medium', 'low'] as const;
const iso = (t: number) => new Date(t).toISOString();

/**
 * Appends `records` records to the workspace log `file` (30 % conversations, 60 % their messages, 10 % issues):
 * one line per conversation with its messages, one per issue. @returns the conversations' count and ids.
 */
export function writeLog(file: string, records: number): { conversations: number; ids: string[] } {
  const r = mulberry32(11);
  const pick = <T>(a: readonly T[]) => a[(r() * a.length) | 0];
  const fd = openSync(file, 'a');
  const parts: Buffer[] = [];
  let bytes = 0;
  const line = (ops: unknown[]) => {
    const b = encodeLine(JSON.stringify(ops));
    parts.push(b);
    bytes += b.length;
    if (bytes > 4 << 20) {
      writeSync(fd, Buffer.concat(parts));
      parts.length = 0;
      bytes = 0;
    }
  };
  const start = Date.parse('2026-01-01T00:00:00.000Z');
  const year = 365 * 86_400_000;
  const nConv = Math.floor(records * 0.3);
  const nIssue = records - nConv * 3;
  const ids: string[] = [];
  const days = new Map<
    string,
    {
      date: string;
      conversationsCreated: number;
      conversationsSolved: number;
      issuesCreated: number;
      issuesClosed: number;
    }
  >();
  const bump = (t: string, f: 'conversationsCreated' | 'conversationsSolved' | 'issuesCreated' | 'issuesClosed') => {
    const date = t.slice(0, 10);
    let d = days.get(date);
    if (!d)
      days.set(
        date,
        (d = { date, conversationsCreated: 0, conversationsSolved: 0, issuesCreated: 0, issuesClosed: 0 }),
      );
    d[f]++;
  };
  for (let i = 0; i < nConv; i++) {
    const created = start + Math.floor((i / nConv) * year);
    const id = newId(created);
    ids.push(id);
    const reply = created + 1000 + Math.floor(r() * 86_400_000);
    const status = pick(STATUSES);
    const last = reply + Math.floor(r() * 3 * 86_400_000);
    const n = i % 20_000;
    const customer = {
      id: `cus-${n}`,
      email: `p${n}@d${n % 9000}.example`,
      ...(r() < 0.7 ? { company: `Company ${n % 3000}` } : {}),
      identitySource: 'api',
    };
    const conv = {
      id,
      status,
      channel: pick(CHANNELS),
      priority: pick(PRIORITIES),
      subject: 'Help with exports',
      preview: 'Thanks',
      customer,
      createdAt: iso(created),
      updatedAt: iso(last),
      lastMessageAt: iso(reply),
      firstResponseAt: iso(reply),
      ...(status === 'solved' ? { closedAt: iso(last) } : {}),
    };
    bump(conv.createdAt, 'conversationsCreated');
    if (status === 'solved') bump(iso(last), 'conversationsSolved');
    const m1 = newId(created);
    const m2 = newId(reply);
    line([
      ['p', 'conversation', id, conv],
      [
        'p',
        'message',
        m1,
        { id: m1, conversationId: id, role: 'user', body: 'The export fails', createdAt: iso(created) },
      ],
      ['p', 'message', m2, { id: m2, conversationId: id, role: 'agent', body: 'Thanks', createdAt: iso(reply) }],
    ]);
  }
  for (let i = 0; i < nIssue; i++) {
    const created = start + Math.floor((i / nIssue) * year);
    const id = newId(created);
    const state = pick(STATES);
    const updated = created + Math.floor(r() * 86_400_000);
    const n = i % 20_000;
    const linked = i % 2 === 0 ? ids[(r() * ids.length) | 0] : undefined;
    const issue = {
      id,
      number: i + 1,
      subject: 'Export bug',
      preview: '',
      state,
      priority: pick(PRIORITIES),
      tags: [],
      ...(linked ? {} : { customer: { email: `p${n}@d${n % 9000}.example`, company: `Company ${n % 3000}` } }),
      source: linked ? { channel: 'api', conversationId: linked } : { channel: 'api' },
      createdAt: iso(created),
      updatedAt: iso(updated),
      ...(state === 'closed' ? { closedAt: iso(updated) } : {}),
    };
    bump(issue.createdAt, 'issuesCreated');
    if (state === 'closed') bump(iso(updated), 'issuesClosed');
    line([['p', 'issue', id, issue]]);
  }
  for (const d of days.values()) line([['p', 'stats_day', d.date, d]]);
  writeSync(fd, Buffer.concat(parts));
  closeSync(fd);
  return { conversations: nConv, ids };
}
