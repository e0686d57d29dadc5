/**
 * Seed data for the benchmarks:
 *  - a base data dir made with the admin CLI (a workspace and a full-access key);
 *  - the main data set (10,000 conversations with messages, 10,000 issues) imported with
 *    the admin CLI, so records are exactly what the server makes;
 *  - 1,000,000-record logs written directly with the project's own `encodeLine` (the CLI
 *    would take minutes): all records live, or churned puts over a tenth as many ids.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeLine } from '../src/store/log/log.js';
import { newId } from '../src/core/ids.js';
import { mulberry32 } from '../test/helpers/prng.js';

/** A tiny deterministic PRNG (mulberry32), so every run seeds the same data. */
export const rng = mulberry32;

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
let CLI_JS = join(ROOT, 'dist', 'cli.js');
/** Runs the admin CLI from another build (bench/run.ts uses a snapshot of dist/). */
export function useCli(path: string): void { CLI_JS = path; }


function cli(dataDir: string, args: string[]): Record<string, unknown> {
  return runCli(dataDir, args);
}

/**
 * Runs one admin CLI command on `dataDir` (through the admin socket of a server running on it,
 * else on the files) and returns its JSON answer. `nodeArgs` go to node (a larger heap for a
 * 10,000,000-record import).
 * @throws Error with the CLI's stderr when it fails.
 */
export function runCli(dataDir: string, args: string[], nodeArgs: string[] = []): Record<string, unknown> {
  const out = execFileSync(process.execPath, [...nodeArgs, CLI_JS, ...args, '--data-dir', dataDir], {
    encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: { ...process.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  return JSON.parse(out) as Record<string, unknown>;
}

/** Creates a workspace and a `*` key in `dataDir` with the admin CLI. */
export function makeBase(dataDir: string): { workspaceId: string; key: string } {
  const ws = cli(dataDir, ['workspace', 'create', '--name', 'Bench']);
  const key = cli(dataDir, ['key', 'create', '--workspace', String(ws.id), '--name', 'bench', '--scopes', '*']);
  return { workspaceId: String(ws.id), key: String(key.key) };
}

const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Frances', 'Dennis', 'Radia', 'John'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson', 'Allen', 'Ritchie', 'Perlman', 'Backus'];
const COMPANIES = ['Analytical Engines Ltd', 'Compiler Works', 'Enigma Systems', 'Structured Labs', 'Abstraction Inc', 'TeX Foundry', 'Apollo Guidance', 'Unix Partners'];
const SUBJECTS = [
  'Export of March invoices fails with a 502 on the billing dashboard',
  'Webhook deliveries are delayed by several minutes since Tuesday',
  'SSO login loops back to the sign-in page for new team members',
  'CSV import rejects rows with accented characters in the name',
  'Rate limit headers missing on some API responses',
  'Cannot downgrade plan from the settings page',
];
const DESCRIPTION = 'Export of March invoices fails with a 502 after thirty seconds; February works. Workaround: export by week.';
const TAGS = ['billing', 'export', 'bug', 'api', 'sso', 'webhooks', 'import', 'plans'];
const STATUSES = ['open', 'waiting', 'solved'] as const;
const STATES = ['new', 'on_you', 'on_customer', 'on_hold', 'closed'] as const;
const PRIORITIES = ['urgent', 'high', 'medium', 'low'] as const;
const CHANNELS = ['email', 'live-chat', 'discord', 'api'] as const;
const BODIES = [
  'Hi, the invoice export keeps failing with an error page. Can you help? We need the files for our accountant by Friday.',
  'Thanks for reaching out! We are looking into it and will get back to you shortly with a workaround.',
  'Any update on this? The problem is still there this morning.',
];

/** Writes the import file for `conversations` conversations and `issues` issues; returns its path. */
export function writeImportFile(dir: string, conversations: number, issues: number): string {
  const r = rng(42);
  const pick = <T>(a: readonly T[]) => a[(r() * a.length) | 0];
  const base = Date.parse('2025-07-01T00:00:00.000Z');
  const convs = [];
  for (let i = 0; i < conversations; i++) {
    const first = pick(FIRST);
    const last = pick(LAST);
    const created = base + i * 60_000;
    const nMsg = 1 + (i % 3);
    convs.push({
      externalId: `ext-${i}`, subject: pick(SUBJECTS),
      customer: { name: `${first} ${last}`, email: `${first}.${last}.${i % 2000}@example.com`.toLowerCase(), company: pick(COMPANIES) },
      status: STATUSES[i % 3], channel: pick(CHANNELS), priority: pick(PRIORITIES), createdAt: new Date(created).toISOString(),
      messages: Array.from({ length: nMsg }, (_, m) => ({ role: m % 2 ? 'agent' : 'user', body: BODIES[m % BODIES.length], createdAt: new Date(created + (m + 1) * 1000).toISOString() })),
    });
  }
  const iss = [];
  for (let i = 0; i < issues; i++) {
    const first = pick(FIRST);
    const last = pick(LAST);
    iss.push({
      subject: pick(SUBJECTS), description: DESCRIPTION, priority: pick(PRIORITIES), state: pick(STATES),
      tags: [pick(TAGS), pick(TAGS)],
      customer: { name: `${first} ${last}`, email: `${first}.${last}@example.com`.toLowerCase(), company: pick(COMPANIES) },
      ...(i % 2 === 0 && i / 2 < conversations ? { conversationExternalId: `ext-${i / 2}` } : {}),
      createdAt: new Date(base + i * 60_000 + 30_000).toISOString(),
    });
  }
  const file = join(dir, 'import.json');
  writeFileSync(file, JSON.stringify({ tags: TAGS.map((name) => ({ name })), conversations: convs, issues: iss }));
  return file;
}

/** Imports the file with the admin CLI (no server running on `dataDir`). */
export function importFile(dataDir: string, workspaceId: string, file: string): Record<string, unknown> {
  return cli(dataDir, ['import', '--workspace', workspaceId, file]);
}

/** Every put of a log, in order: (type, id, record). A frame's markers (docs/storage.md#frames) are skipped. */
export function* readLogOps(file: string): Generator<[string, string, Record<string, unknown>]> {
  const text = readFileSync(file, 'utf8');
  for (const line of text.split('\n')) {
    if (line.length < 10) continue;
    const ops = JSON.parse(line.slice(9)) as unknown;
    if (!Array.isArray(ops)) continue;
    for (const op of ops as unknown[][]) {
      if (op[0] === 'p') yield [op[1] as string, op[2] as string, op[3] as Record<string, unknown>];
    }
  }
}

/** The live ids of each type in a workspace log. */
export function liveIds(file: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const [type, id] of readLogOps(file)) {
    let set = out.get(type);
    if (!set) { set = new Set(); out.set(type, set); }
    set.add(id);
  }
  return out;
}

export interface GeneratedLog { records: number; live: number; liveJsonBytes: number; fileBytes: number; seconds: number }

/**
 * Writes `records` puts, one transaction per line, to `file` (appending). `live`: how many
 * distinct ids they go over — equal to `records` for an all-live log (10 % conversations,
 * 80 % their messages, 10 % issues), fewer for a churned log (conversations and issues put
 * again and again, like PATCHes). `liveJsonBytes` sums the JSON size of the final records.
 */
export function generateLog(file: string, records: number, live: number): GeneratedLog {
  const t0 = performance.now();
  const r = rng(7);
  const pick = <T>(a: readonly T[]) => a[(r() * a.length) | 0];
  const fd = openSync(file, 'a');
  const base = Date.parse('2024-01-01T00:00:00.000Z');
  const parts: Buffer[] = [];
  let partBytes = 0;
  let fileBytes = 0;
  const flush = () => { const b = Buffer.concat(parts); writeSync(fd, b); fileBytes += b.length; parts.length = 0; partBytes = 0; };
  const put = (type: string, id: string, rec: Record<string, unknown>) => {
    const line = encodeLine(JSON.stringify([['p', type, id, rec]]));
    parts.push(line);
    partBytes += line.length;
    if (partBytes > 4 << 20) flush();
  };
  const convIds: string[] = [];
  const issueIds: string[] = [];
  let issueNumber = 0;
  const conversation = (id: string, idx: number, created: number, version: number) => {
    const first = FIRST[idx % FIRST.length];
    const last = LAST[(idx >> 4) % LAST.length];
    const t = new Date(created + version * 60_000).toISOString();
    return {
      id, status: STATUSES[version % 3], channel: pick(CHANNELS), priority: pick(PRIORITIES), subject: `${pick(SUBJECTS)} (v${version})`,
      preview: BODIES[version % BODIES.length].slice(0, 160),
      customer: { id: `cus-${idx % 50_000}`, name: `${first} ${last}`, email: `${first}.${last}.${idx % 50_000}@example.com`.toLowerCase(), company: COMPANIES[idx % COMPANIES.length], identitySource: 'api' },
      createdAt: new Date(created).toISOString(), updatedAt: t, lastMessageAt: t,
    };
  };
  const issue = (id: string, number: number, created: number, version: number) => ({
    id, number, subject: `${pick(SUBJECTS)} (v${version})`, description: DESCRIPTION, preview: DESCRIPTION.slice(0, 160),
    state: STATES[version % STATES.length], priority: pick(PRIORITIES), tags: [pick(TAGS)],
    customer: { name: `${FIRST[number % FIRST.length]} ${LAST[number % LAST.length]}`, email: 'someone@example.com', company: COMPANIES[number % COMPANIES.length] },
    source: { channel: 'api' }, createdAt: new Date(created).toISOString(), updatedAt: new Date(created + version * 60_000).toISOString(),
  });
  const liveSize = new Map<string, number>();
  const track = (type: string, id: string, rec: Record<string, unknown>) => {
    put(type, id, rec);
    liveSize.set(id, JSON.stringify(rec).length);
  };
  for (const name of TAGS) { const id = newId(base); track('tag', id, { id, name, createdAt: new Date(base).toISOString() }); }
  let written = TAGS.length;
  if (live >= records) {
    // All live: per conversation, 8 messages; one issue per conversation.
    while (written < records) {
      const created = base + written * 1000;
      const cid = newId(created);
      convIds.push(cid);
      track('conversation', cid, conversation(cid, convIds.length - 1, created, 0));
      written++;
      for (let m = 0; m < 8 && written < records; m++, written++) {
        const mid = newId(created + m);
        track('message', mid, { id: mid, conversationId: cid, role: m % 2 ? 'agent' : 'user', body: BODIES[m % BODIES.length], createdAt: new Date(created + (m + 1) * 1000).toISOString() });
      }
      if (written < records) {
        const iid = newId(created);
        track('issue', iid, issue(iid, ++issueNumber, created, 0));
        written++;
      }
    }
  } else {
    // Churned: `live` ids (half conversations, half issues), each put records/live times.
    const ids = live - TAGS.length;
    for (let i = 0; i < ids; i++) {
      const created = base + i * 1000;
      const id = newId(created);
      if (i % 2 === 0) { convIds.push(id); track('conversation', id, conversation(id, convIds.length - 1, created, 0)); }
      else { issueIds.push(id); track('issue', id, issue(id, ++issueNumber, created, 0)); }
      written++;
    }
    let version = 1;
    while (written < records) {
      for (let i = 0; i < convIds.length && written < records; i++) {
        track('conversation', convIds[i], conversation(convIds[i], i, base + i * 2000, version));
        written++;
        if (written < records && i < issueIds.length) { track('issue', issueIds[i], issue(issueIds[i], i + 1, base + i * 2000 + 1000, version)); written++; }
      }
      version++;
    }
  }
  flush();
  closeSync(fd);
  let liveJsonBytes = 0;
  for (const v of liveSize.values()) liveJsonBytes += v;
  return { records: written, live: liveSize.size, liveJsonBytes, fileBytes, seconds: (performance.now() - t0) / 1000 };
}

/**
 * A synthetic OpenAPI 3.0 JSON document of about `bytes` characters (README "Performance"'s
 * 2 MB document; the API takes pasted content up to 2,000,000 characters).
 */
export function syntheticOpenApi(bytes: number): string {
  const doc = {
    openapi: '3.0.3',
    info: { title: 'Synthetic bench API', version: '1.0.0', description: 'Generated by bench/seed.ts' },
    servers: [{ url: 'https://api.example.com/v1' }],
    paths: {} as Record<string, unknown>,
    components: { schemas: {} as Record<string, unknown> },
  };
  const text = 'Returns the resource with the given identifier. Fields that the caller has no access to are omitted. '
    + 'Paginated lists return at most one hundred items per page and a cursor for the next page.';
  let size = JSON.stringify(doc).length;
  for (let i = 0; size < bytes - 4000; i++) {
    const schema = {
      type: 'object', description: `Resource ${i}. ${text}`, required: ['id', 'name'],
      properties: {
        id: { type: 'string', description: 'Identifier.' }, name: { type: 'string', description: `Name of resource ${i}.` },
        count: { type: 'integer', minimum: 0 }, tags: { type: 'array', items: { type: 'string' } }, createdAt: { type: 'string', format: 'date-time' },
      },
    };
    const op = (verb: string) => ({
      operationId: `${verb}Resource${i}`, summary: `${verb} resource ${i}`, description: text, tags: [`group${i % 20}`],
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
      responses: { 200: { description: 'OK', content: { 'application/json': { schema: { $ref: `#/components/schemas/Resource${i}` } } } }, 404: { description: 'Not found' } },
    });
    const path = { get: op('get'), patch: op('update'), delete: op('delete') };
    doc.paths[`/resources${i}/{id}`] = path;
    doc.components.schemas[`Resource${i}`] = schema;
    size += JSON.stringify(path).length + JSON.stringify(schema).length + 40;
  }
  const out = JSON.stringify(doc, null, 1);
  return out.length > 1_999_000 ? JSON.stringify(doc) : out;
}
