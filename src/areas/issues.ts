/**
 * Support issues (docs/api.md#issues): sequential `number` per workspace, `state` with `closedAt`, tags that join the
 * workspace's tag list, and an optional link to the conversation the issue was opened from.
 */
import { s, type Static } from '../http/schema.js';
import { InvalidInputError } from '../core/errors.js';
import { route, type Ctx } from '../domain/route.js';
import { ViewCache, listJson } from '../http/viewCache.js';
import { newId } from '../core/ids.js';
import { iso } from '../core/clock.js';
import type { Workspace } from '../domain/workspace.js';
import type { Db, Tx } from '../store/db.js';
import { attachIndexes, groupBy, orderBy } from '../store/indexes.js';
import type { DefinitionRecords } from './definitions.js';
import { compact, listSchema, notFound, pageParams, paginate, priority, type Priority } from './common.js';

export const ISSUE_STATES = ['new', 'on_you', 'on_customer', 'on_hold', 'closed'] as const;
export type IssueState = (typeof ISSUE_STATES)[number];

export interface Issue {
  id: string; number: number; subject: string; description?: string; preview: string;
  state: IssueState; priority: Priority; tags: string[];
  customer?: { name?: string; email?: string; company?: string };
  source: { channel: string; conversationId?: string };
  createdAt: string; updatedAt: string; closedAt?: string;
}
/** The record types of the issues area. */
export interface IssueRecords { issue: Issue }

/** The indexes of issues (docs/storage.md#indexes). */
export const issueIndexes = {
  /** By (createdAt, id): the list order, and analytics' range scans. */
  order: orderBy((i: Issue) => i.createdAt),
  /** Conversation id → the ids of the issues opened from it. */
  byConversation: groupBy((i: Issue) => i.source.conversationId),
};

/** The highest issue `number` in use, kept current on every change of an issue. */
export class IssueNumbers {
  private max = 0;

  constructor(private readonly db: Db<IssueRecords>) {
    db.on('issue', (_id, prev, next) => {
      if (next) { if (next.number > this.max) this.max = next.number; } else if (
        prev!.number === this.max) this.recompute();
    }, {
      // Saved in the snapshot block (docs/storage.md#snapshots); issues are never dropped by compaction.
      name: 'issue.numbers/1',
      capture: () => { const max = this.max; return () => ({ max: [max] }); },
      restore: (cols, ctx) => {
        const max = ctx.numbers(cols.max)[0];
        if (max === undefined) throw new Error('no highest number');
        return () => { this.max = max; };
      },
    });
  }

  /** The highest number in use; 0 when there is no issue. */
  get highest(): number { return this.max; }

  /** After an undone create, the highest number in use again (numbers stay sequential). */
  private recompute(): void {
    let max = 0;
    for (const r of this.db.table('issue').values()) if (r.number > max) max = r.number;
    this.max = max;
  }
}

/** The issues area's state in a workspace: its declared indexes and the numbers in use. */
export function attachIssues(db: Db<IssueRecords>) {
  return { ...attachIndexes(db, 'issue', issueIndexes), numbers: new IssueNumbers(db) };
}

const issueState = s.named('IssueState', s.enum(ISSUE_STATES, {
  description: 'Whose move it is: `new`, `on_you` (support), `on_customer`, `on_hold`, or `closed`.' }));
const issueCustomerInput = s.named('IssueCustomerInput', s.object({
  name: s.optional(s.string({ maxLength: 160 })),
  email: s.optional(s.string({ maxLength: 320, format: 'email' })),
  company: s.optional(s.string({ maxLength: 160 })),
}));
const fields = {
  subject: s.string({ minLength: 1, maxLength: 200 }),
  description: s.optional(s.string({ maxLength: 20000 })),
  priority: s.optional(priority),
  tags: s.optional(s.array(s.string({ minLength: 1, maxLength: 64 }), {
    maxItems: 50, description: 'Tag names; repeats (ignoring case) are dropped, and new names join the workspace\'s ' +
      'tags.',
  })),
  customer: s.optional(issueCustomerInput),
  state: s.optional(issueState),
};
export const createIssueBody = s.named('CreateIssueRequest', s.object({
  ...fields,
  priority: s.optional({ ...priority, description: 'Default `medium`.' }),
  state: s.optional({ ...issueState, description: 'Default `new`.' }),
  conversationId: s.optional(s.string({
    minLength: 1, maxLength: 200,
    description: 'The id of a conversation in the key\'s workspace to open the issue from: the issue takes its ' +
      'channel, and its customer when `customer` is left out. '
      + 'An id that matches no conversation of the workspace → 400 `invalid_request`.',
  })),
}));
const updateIssueBody = s.named('UpdateIssueRequest', s.object({ ...fields, subject: s.optional(fields.subject) }, {
  description: 'The fields to change; the others keep their values. `tags` replaces the whole list.',
}));
const listQuery = s.object({
  state: s.optional(issueState),
  priority: s.optional(priority),
  tag: s.optional(s.string({ minLength: 1, maxLength: 64, description: 'Only issues with this tag (ignoring case).' })),
  conversationId: s.optional(s.string({ minLength: 1, maxLength: 200,
    description: 'Only issues opened from this conversation.' })),
  updatedAfter: s.optional(s.string({ format: 'date-time' })),
  ...pageParams,
});

const isoSchema = s.string({ format: 'date-time' });
export const issueSchema = s.named('Issue', s.object({
  object: s.enum(['issue'] as const), id: s.string(), number: s.integer({ minimum: 1,
    description: 'Sequential per workspace, from 1.' }),
  subject: s.string(), preview: s.string({ description: 'The start of the description (at most 160 characters).' }),
    description: s.optional(s.string()),
  state: issueState, priority, tags: s.array(s.string()),
  customer: s.optional(s.named('IssueCustomer', s.object({ name: s.optional(s.string()), email: s.optional(s.string({
    format: 'email' })), company: s.optional(s.string()) }))),
  source: s.named('IssueSource', s.object({
    channel: s.string({ description: '`api`, or the channel of the conversation the issue was opened from.' }),
    conversationId: s.optional(s.string({ description: 'The conversation the issue was opened from.' })),
  })),
  createdAt: isoSchema, updatedAt: isoSchema,
  lastActivityAt: { ...isoSchema,
    description: 'The later of `updatedAt` and the last message of the linked conversation.' },
  closedAt: s.optional({ ...isoSchema, description: 'When it was closed; absent unless `state` is `closed`.' }),
}));
const issueResponse = s.named('IssueResponse', s.object({ issue: issueSchema }));

/** The API view: adds `lastActivityAt`, the later of `updatedAt` and the conversation's last message. */
export function issueView(ws: Workspace, i: Issue): Record<string, unknown> {
  let lastActivityAt = i.updatedAt;
  const cid = i.source.conversationId;
  const last = cid ? ws.get('conversation', cid)?.lastMessageAt : undefined;
  if (last && last > lastActivityAt) lastActivityAt = last;
  const { closedAt, ...rest } = i;
  return compact({ object: 'issue', ...rest, lastActivityAt, closedAt });
}

/** Tags without case-insensitive duplicates; new ones join the workspace's tag list in `tx`. */
export function useTags(ws: Workspace, tx: Tx<DefinitionRecords>, tags: string[], at: number): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const t of tags) {
    const k = t.toLowerCase();
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(t);
    if (!ws.tags.byName.has(k)) { const id = newId(); tx.put('tag', id, { id, name: t, createdAt: iso(at) }); }
  }
  return out;
}

const descriptionPreview = (d: string | undefined) => (d ?? '').slice(0, 160).replace(/[\ud800-\udbff]$/, '');

/**
 * Creates an issue in `tx` with the next number (used by the API and by import).
 * @throws InvalidInputError when `conversationId` is not a conversation of the workspace.
 */
export function createIssue(ws: Workspace, tx: Tx<IssueRecords & DefinitionRecords>,
  input: Static<typeof createIssueBody>, at: number): Issue {
  let source: Issue['source'] = { channel: 'api' };
  let customer = input.customer && compact({ name: input.customer.name, email: input.customer.email,
    company: input.customer.company });
  if (input.conversationId !== undefined) {
    const conv = ws.get('conversation', input.conversationId);
    if (!conv) throw new InvalidInputError(['conversationId'], 'does not match a conversation in this workspace');
    source = { channel: conv.channel, conversationId: conv.id };
    customer ??= compact({ name: conv.customer.name, email: conv.customer.email, company: conv.customer.company });
  }
  const now = iso(at);
  const state = input.state ?? 'new';
  const issue: Issue = compact({
    id: newId(), number: ws.issues.numbers.highest + 1, subject: input.subject, description: input.description,
    preview: descriptionPreview(input.description), state, priority: input.priority ?? 'medium',
    tags: useTags(ws, tx, input.tags ?? [], at), customer, source,
    createdAt: now, updatedAt: now, closedAt: state === 'closed' ? now : undefined,
  });
  tx.put('issue', issue.id, issue);
  return issue;
}

/** Serialized issue views, reused while neither the issue nor its conversation changed. */
const issueJsonCache = new WeakMap<object, ViewCache<Issue>>();
function issueCache(ws: Workspace): ViewCache<Issue> {
  let cache = issueJsonCache.get(ws);
  if (!cache) { cache = new ViewCache((x: Issue) => issueView(ws, x), 'issue'); issueJsonCache.set(ws, cache); }
  return cache;
}
/** The issue's conversation record: the view's `lastActivityAt` depends on it. */
const issueDep = (ws: Workspace, i: Issue): object | undefined =>
  i.source.conversationId ? ws.get('conversation', i.source.conversationId) : undefined;
function issueJson(ws: Workspace, i: Issue): string {
  return issueCache(ws).json(i, issueDep(ws, i));
}

function load(ctx: Ctx<unknown, unknown>): Issue {
  const issue = ctx.ws.get('issue', ctx.params.issueId);
  if (!issue) throw notFound();
  return issue;
}

const base = '/api/v1/issues';
export const issueRoutes = [
  route({
    method: 'GET', path: base, operationId: 'listIssues', tag: 'Issues', scope: 'issues:read',
    summary: 'List issues, newest first, filtered by state, priority, tag, conversation or last update.',
    query: listQuery,
    success: { status: 200, schema: listSchema('issues', issueSchema), description: 'A page of issues.' },
    handler: (ctx) => {
      const q = ctx.query;
      const after = q.updatedAfter === undefined ? undefined : Date.parse(q.updatedAfter);
      const tag = q.tag?.toLowerCase();
      const page = paginate(ctx, 'issues', ctx.ws.issues.order, 'desc', q, (id) => ctx.ws.get('issue', id), (i) =>
        (q.state === undefined || i.state === q.state) && (q.priority === undefined || i.priority === q.priority)
        && (tag === undefined || i.tags.some((t) => t.toLowerCase() === tag))
        && (q.conversationId === undefined || i.source.conversationId === q.conversationId)
        && (after === undefined || Date.parse(i.updatedAt) > after));
      const items = page.items.map((i) => issueJson(ctx.ws, i));
      return { status: 200, body: null, json: listJson('issues', page.hasMore, page.nextCursor, items) };
    },
  }),
  route({
    method: 'POST', path: base, operationId: 'createIssue', tag: 'Issues', scope: 'issues:write',
    summary: 'Create an issue, optionally opened from a conversation.',
    body: createIssueBody,
    success: { status: 201, schema: issueResponse, description: 'The created issue.' },
    handler: (ctx) => ({ status: 201, body: { issue: issueView(ctx.ws, createIssue(ctx.ws, ctx.tx(), ctx.body,
      ctx.now)) } }),
  }),
  route({
    method: 'GET', path: `${base}/{issueId}`, operationId: 'retrieveIssue', tag: 'Issues', scope: 'issues:read',
    summary: 'Retrieve an issue.',
    success: { status: 200, schema: issueResponse, description: 'The issue.' },
    handler: (ctx) => { const i = load(ctx); return { status: 200, body: null, json: issueCache(ctx.ws).answer(i,
      issueDep(ctx.ws, i)) }; },
  }),
  route({
    method: 'PATCH', path: `${base}/{issueId}`, operationId: 'updateIssue', tag: 'Issues', scope: 'issues:write',
    summary: 'Update an issue; `closed` sets `closedAt`, leaving it clears it; `tags` replaces the list.',
    body: updateIssueBody,
    success: { status: 200, schema: issueResponse, description: 'The updated issue.' },
    handler: (ctx) => {
      const issue = load(ctx);
      const b = ctx.body;
      const now = iso(ctx.now);
      const next: Issue = { ...issue };
      if (b.subject !== undefined) next.subject = b.subject;
      if (b.description !== undefined) { next.description = b.description; next.preview =
        descriptionPreview(b.description); }
      if (b.priority !== undefined) next.priority = b.priority;
      // Fixed key order, so the unchanged-check below does not see a reordered customer as a change.
      if (b.customer !== undefined) next.customer = compact({ name: b.customer.name, email: b.customer.email,
        company: b.customer.company });
      if (b.tags !== undefined) next.tags = useTags(ctx.ws, ctx.tx(), b.tags, ctx.now);
      if (b.state !== undefined && b.state !== issue.state) {
        next.state = b.state;
        if (b.state === 'closed') next.closedAt = now; else delete next.closedAt;
      }
      if (JSON.stringify(next) === JSON.stringify(issue)) return { status: 200,
        body: { issue: issueView(ctx.ws, issue) } };
      next.updatedAt = now;
      ctx.tx().put('issue', issue.id, next);
      return { status: 200, body: { issue: issueView(ctx.ws, next) } };
    },
  }),
];
