/**
 * AI support agents (DESIGN §5): created by the CLI or import, each with a public
 * `widgetKey` (`svcw_…`) for embedding that is never accepted as an API key.
 */
import { s, type Static } from '../http/schema.js';
import { newId } from '../ids.js';
import { iso } from '../clock.js';
import { generateWidgetKey } from '../auth/keys.js';
import { T } from '../workspace.js';
import type { Rec, Tx } from '../store/db.js';

export interface Agent { id: string; name: string; description: string; enabled: boolean; widgetKey: string; createdAt: string; updatedAt: string }

export const agentInput = s.object({
  name: s.string({ minLength: 1, maxLength: 200 }),
  description: s.optional(s.string({ maxLength: 2000 })),
  enabled: s.optional(s.boolean()),
});

/** Creates an agent with a fresh widget key in `tx`. */
export function createAgent(tx: Tx, input: Static<typeof agentInput>, at: number): Agent {
  const now = iso(at);
  const a: Agent = { id: newId(), name: input.name, description: input.description ?? '', enabled: input.enabled ?? true, widgetKey: generateWidgetKey(), createdAt: now, updatedAt: now };
  tx.put(T.agent, a.id, a as unknown as Rec);
  return a;
}
