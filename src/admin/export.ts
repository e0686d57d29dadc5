/**
 * The admin CLI's export (docs/configuration.md#export): a workspace written in the import format
 * (docs/configuration.md#import-file), so that importing it into an empty workspace gives the same list answers, ids
 * aside. A conversation without an `externalId` gets a file-local `ref` for the issues that link to it.
 */
import type { Workspace } from '../domain/workspace.js';
import type { Conversation, Message } from '../areas/conversations/conversations.js';
import type { Issue } from '../areas/issues.js';
import type { ImportFile } from './import.js';

type Row = Record<string, unknown>;
const byCreated = <T extends { createdAt: string; id: string }>(a: T, b: T) =>
  a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
/** `rec` without the keys whose value is undefined. */
const defined = (rec: Row) => Object.fromEntries(Object.entries(rec).filter(([, v]) => v !== undefined));

/**
 * The workspace `ws` as an import file: custom fields (by position), enabled tags, agents, conversations with their
 * messages (oldest first) and issues, each with the fields the import takes. Sources are not part of it (the
 * import takes none).
 */
export function exportWorkspace(ws: Workspace): ImportFile {
  const table = <T>(type: string) =>
    [...(ws.db.table(type as never) as unknown as ReadonlyMap<string, unknown>).values()] as T[];
  const customFields = table<Row & { position: number; id: string; createdAt: string }>('custom_field')
    .sort((a, b) => a.position - b.position || byCreated(a, b))
    .map((f) => defined({ label: f.label, type: f.type, enabled: f.enabled, fillMode: f.fillMode,
      description: f.description, options: (f.options as string[]).length ? f.options : undefined,
      aiInstructions: f.aiInstructions, position: f.position }));
  const tags = table<{ id: string; name: string; createdAt: string; enabled?: boolean }>('tag')
    .filter((t) => t.enabled !== false).sort(byCreated).map((t) => ({ name: t.name }));
  const agents = table<Row & { id: string; createdAt: string }>('agent').sort(byCreated)
    .map((a) => defined({ name: a.name, description: a.description, enabled: a.enabled,
      allowedOrigins: a.allowedOrigins,
      createdAt: a.createdAt, updatedAt: a.updatedAt }));
  const messages = new Map<string, Message[]>();
  for (const m of table<Message>('message')) {
    const list = messages.get(m.conversationId);
    if (list) list.push(m); else messages.set(m.conversationId, [m]);
  }
  const refs = new Map<string, string>();
  const conversations = table<Conversation>('conversation').sort(byCreated).map((c, i) => {
    if (c.externalId === undefined) refs.set(c.id, `c${i + 1}`);
    return defined({ externalId: c.externalId, ref: refs.get(c.id), subject: c.subject,
      customer: defined({ id: c.customer.id, name: c.customer.name,
        email: c.customer.email, company: c.customer.company }),
      status: c.status, channel: c.channel, priority: c.priority, createdAt: c.createdAt,
      messages: (messages.get(c.id) ?? []).sort(byCreated).map((m) => ({ role: m.role, body: m.body,
        createdAt: m.createdAt })) });
  });
  const convs = ws.db.table('conversation' as never) as unknown as ReadonlyMap<string, Conversation>;
  const issues = table<Issue>('issue').sort((a, b) => a.number - b.number).map((x) => {
    const linked = x.source.conversationId === undefined ? undefined : convs.get(x.source.conversationId);
    return defined({ subject: x.subject, description: x.description, priority: x.priority,
      tags: x.tags.length ? x.tags : undefined, state: x.state, customer: x.customer,
      conversationExternalId: linked?.externalId, conversationRef: linked ? refs.get(linked.id) : undefined,
      createdAt: x.createdAt });
  });
  return { customFields, tags, agents, conversations, issues } as ImportFile;
}
