/**
 * The admin CLI's import (docs/configuration.md#import-file): custom fields, tags, agents, conversations with their
 * messages, and issues, from one JSON file, in one transaction — all or nothing — marked `bulk` (a migration makes no
 * events, docs/api.md#events).
 */
import { s, validateInput, type Static } from '../http/schema.js';
import { InvalidInputError, type FieldPath } from '../core/errors.js';
import type { Workspace } from '../domain/workspace.js';
import { addMessage, createConversation, customerInput, CONVERSATION_STATUSES, CHANNELS,
  type Conversation } from '../areas/conversations/conversations.js';
import { createIssue, ISSUE_STATES, useTags } from '../areas/issues.js';
import { createCustomField, customFieldInput } from '../areas/definitions.js';
import { agentInputFields, checkSources, createAgent } from '../areas/agents.js';
import { priority } from '../areas/common.js';

const when = s.optional(s.string({ format: 'date-time' }));
const importSchema = s.object({
  customFields: s.optional(s.array(customFieldInput)),
  tags: s.optional(s.array(s.object({ name: s.string({ minLength: 1, maxLength: 64 }) }))),
  agents: s.optional(s.array(s.object({ ...agentInputFields, createdAt: when, updatedAt: when }))),
  conversations: s.optional(s.array(s.object({
    externalId: s.optional(s.string({ minLength: 1, maxLength: 200 })),
    /** A name for the conversation in this file alone, for issues to link to it (docs/configuration.md#import-file). */
    ref: s.optional(s.string({ minLength: 1, maxLength: 200 })),
    subject: s.string({ minLength: 1, maxLength: 200 }),
    customer: customerInput,
    status: s.optional(s.enum(CONVERSATION_STATUSES)),
    channel: s.optional(s.enum(CHANNELS)),
    priority: s.optional(priority),
    createdAt: when,
    messages: s.optional(s.array(s.object({ role: s.enum(['user', 'agent'] as const), body: s.string({ minLength: 1,
      maxLength: 20000 }), createdAt: when }))),
  }))),
  issues: s.optional(s.array(s.object({
    subject: s.string({ minLength: 1, maxLength: 200 }),
    description: s.optional(s.string({ maxLength: 20000 })),
    priority: s.optional(priority),
    tags: s.optional(s.array(s.string({ minLength: 1, maxLength: 64 }), { maxItems: 50 })),
    state: s.optional(s.enum(ISSUE_STATES)),
    customer: s.optional(s.object({ name: s.optional(s.string({ maxLength: 160 })), email: s.optional(s.string({
      maxLength: 320, format: 'email' })), company: s.optional(s.string({ maxLength: 160 })) })),
    conversationExternalId: s.optional(s.string({ minLength: 1, maxLength: 200 })),
    conversationRef: s.optional(s.string({ minLength: 1, maxLength: 200 })),
    createdAt: when,
  }))),
});
export type ImportFile = Static<typeof importSchema>;

/**
 * Imports `data` into `ws` at time `now` (ms) as one transaction.
 * @returns `{object:"import", workspaceId, imported: counts per kind}`.
 * @throws InvalidInputError with the JSON path in the file of the first invalid or unknown property (or of a rule
 *   broken across records); ConflictError for an identifier used twice (in the file, or already in the workspace); the
 *   log's write errors (nothing is kept then).
 */
export async function importFile(ws: Workspace, data: unknown, now: number) {
  const file: ImportFile = validateInput(importSchema, data);
  const at = (v: string | undefined) => (v === undefined ? now : Date.parse(v));
  const tx = ws.db.begin();
  // A bulk import: no events for its records (docs/api.md#events).
  tx.bulk = true;
  const counts = { customFields: 0, tags: 0, agents: 0, conversations: 0, messages: 0, issues: 0 };
  /** Runs `make` for the record at `path` in the file, so that its input errors name their place in the file. */
  const inFile = <R>(path: FieldPath, make: () => R): R => {
    try { return make(); } catch (e) { throw e instanceof InvalidInputError ? e.within(path) : e; }
  };
  /** Conversations of this file by `ref`. */
  const refs = new Map<string, string>();
  try {
    for (const [i, f] of (file.customFields ?? []).entries()) {
      inFile(['customFields', i], () => createCustomField(ws, tx, f, now)); counts.customFields++; }
    for (const t of file.tags ?? []) { if (!ws.tags.byName.has(t.name.toLowerCase())) counts.tags++; useTags(ws, tx, [
      t.name], now); }
    for (const [i, a] of (file.agents ?? []).entries()) {
      const { createdAt, updatedAt, ...input } = a;
      const sources = input.sources && inFile(['agents', i], () => checkSources(input.sources!, (id) =>
        ws.get('source', id) !== undefined));
      const agent = createAgent(tx, sources ? { ...input, sources } : input, at(createdAt));
      if (updatedAt !== undefined) {
        if (Date.parse(updatedAt) < at(createdAt)) throw new InvalidInputError(['agents', i, 'updatedAt'],
          'is before createdAt');
        tx.put('agent', agent.id, { ...agent, updatedAt: new Date(Date.parse(updatedAt)).toISOString() });
      }
      counts.agents++;
    }
    for (const [i, c] of (file.conversations ?? []).entries()) {
      const created = at(c.createdAt);
      const { ref, ...input } = c;
      if (ref !== undefined && refs.has(ref)) throw new InvalidInputError(['conversations', i, 'ref'],
        'is used by an earlier conversation of the file');
      let conv: Conversation = inFile(['conversations', i], () => createConversation(ws, tx, input, created, {
        channel: c.channel }));
      if (ref !== undefined) refs.set(ref, conv.id);
      const msgs = (c.messages ?? []).map((m) => ({ ...m, t: at(m.createdAt ?? c.createdAt) })).sort((x, y) =>
        x.t - y.t);
      for (const m of msgs) {
        if (m.t < created) throw new InvalidInputError(['conversations', i, 'messages'],
          'has a message older than the conversation');
        conv = addMessage(tx, conv, m, m.t).conversation;
        counts.messages++;
      }
      if (c.status && c.status !== conv.status) {
        const last = conv.updatedAt;
        const next = { ...conv, status: c.status } as Conversation;
        if (c.status === 'solved') next.closedAt = last; else delete next.closedAt;
        tx.put('conversation', conv.id, next);
      }
      counts.conversations++;
    }
    for (const [i, x] of (file.issues ?? []).entries()) {
      let conversationId: string | undefined;
      if (x.conversationRef !== undefined && x.conversationExternalId !== undefined) throw new InvalidInputError(
        ['issues', i, 'conversationRef'], 'cannot be given with conversationExternalId');
      if (x.conversationExternalId !== undefined) {
        conversationId = ws.conversations.byExternalId.get(x.conversationExternalId);
        if (!conversationId) throw new InvalidInputError(['issues', i, 'conversationExternalId'],
          'matches no conversation');
      }
      if (x.conversationRef !== undefined) {
        conversationId = refs.get(x.conversationRef);
        if (!conversationId) throw new InvalidInputError(['issues', i, 'conversationRef'],
          'matches no conversation of the file');
      }
      const { conversationExternalId: _, conversationRef: _r, createdAt, ...rest } = x;
      inFile(['issues', i], () => createIssue(ws, tx, { ...rest, conversationId }, at(createdAt)));
      counts.issues++;
    }
  } catch (e) {
    tx.abort();
    throw e;
  }
  await ws.db.commit(tx);
  return { object: 'import', workspaceId: ws.id, imported: counts };
}
