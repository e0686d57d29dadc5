/**
 * Agents' modes (docs/api.md#agent-modes): with `reply`, each customer message of a `live-chat` conversation that
 * reaches the disk is answered from the agent's sources as a bot message; with `suggest`, the answer is stored for the
 * inbox only. Once a person has replied, the bot writes no message in that conversation until it is solved: checked
 * in the same synchronous write that puts the bot's message, so a bot message never lands after a person's.
 */
import { agentSettings, type Agent } from '../agents.js';
import { addMessage, requestHandoff, type Author, type Conversation } from '../conversations/conversations.js';
import type { RouteDeps } from '../common.js';
import type { Workspace } from '../../domain/workspace.js';
import { composeAnswer } from './answers.js';
import type { Answer } from './model.js';

/** A customer message that asks for a person ("talk to a person", "a human please", "agent!"…). */
export const ASKS_FOR_PERSON = new RegExp(
  String.raw`\b(?:talk|speak|chat)\s+(?:to|with)\s+(?:a\s+|an\s+|your\s+)?(?:real\s+)?(?:person|human|agent|`
  + String.raw`someone|representative|staff)\b|^(?:a\s+)?(?:real\s+)?(?:person|human|agent|representative)`
  + String.raw`(?:\s+please)?[\s!.]*$|\boperator\b`, 'i');
/** The bot's message when it hands over. */
export const HANDOFF_TEXT = 'I am asking a person from the team to help; they will answer here.';

/** The bot message of `answer`: its text, then the cited parts with their public docs address when published. */
export function botMessageText(answer: Answer): string {
  if (answer.outcome !== 'answered' || answer.citations.length === 0) return answer.text;
  const cited = answer.citations.map((c, i) => `[${i + 1}] ${c.method && c.path ? `${c.method} ${c.path}` : c.title}`
    + (c.url ? ` — ${c.url}` : ''));
  return `${answer.text}\n\nSources:\n${cited.join('\n')}`.slice(0, 4000);
}

/** The author of the agent's bot messages. */
const botOf = (agent: Agent): Author => ({ type: 'bot', id: agent.id, name: agent.name });

/** The agent that answers `conv`: the one whose widget started it, else the oldest enabled agent not `off`. */
function agentOf(ws: Workspace, conv: Conversation): Agent | undefined {
  if (conv.agentId !== undefined) return ws.get('agent', conv.agentId);
  for (const at of ws.agents.order.asc()) {
    const a = ws.get('agent', ws.agents.order.idAt(at));
    if (a?.enabled && agentSettings(a).mode !== 'off') return a;
  }
  return undefined;
}

export class AutoReplies {
  private readonly watched = new WeakSet<Workspace>();
  /** `workspace/conversation` → whether another customer message came while its answer was being made. */
  private readonly running = new Map<string, boolean>();
  private readonly inFlight = new Set<Promise<void>>();

  /** `now`: the clock (ms). */
  constructor(private readonly deps: RouteDeps, private readonly now: () => number) {}

  /** Answers `ws`'s customer messages from now on (idempotent). */
  watch(ws: Workspace): void {
    if (this.watched.has(ws)) return;
    this.watched.add(ws);
    ws.db.afterCommit((tx) => {
      for (const op of tx.ops) {
        if (op[0] !== 'p' || op[1] !== 'message') continue;
        const m = ws.get('message', op[2]);
        if (m?.role === 'user') this.consider(ws, m.conversationId);
      }
    });
  }

  /** Resolves once every answer being made has been written (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  /** One answer at a time per conversation; a message that comes meanwhile is answered after it, once. */
  private consider(ws: Workspace, conversationId: string): void {
    const key = `${ws.id}/${conversationId}`;
    if (this.running.has(key)) { this.running.set(key, true); return; }
    this.running.set(key, false);
    const run = (async () => {
      try {
        do {
          this.running.set(key, false);
          await this.answer(ws, conversationId);
        } while (this.running.get(key) === true);
      } catch (e) {
        this.deps.logger.error('agent answer failed', { workspace: ws.id, error: (e as Error).message });
      } finally {
        this.running.delete(key);
      }
    })();
    this.inFlight.add(run);
    void run.finally(() => this.inFlight.delete(run));
  }

  private async answer(ws: Workspace, conversationId: string): Promise<void> {
    const conv = ws.get('conversation', conversationId);
    if (!conv || conv.channel !== 'live-chat') return;
    const agent = agentOf(ws, conv);
    if (!agent || !agent.enabled) return;
    const { mode, handoffAfterUncertain } = agentSettings(agent);
    if (mode === 'off') return;
    const asked = newestCustomerMessage(ws, conversationId);
    if (asked !== undefined && ASKS_FOR_PERSON.test(asked.trim())) {
      const tx = ws.db.begin();
      const current = ws.get('conversation', conversationId)!;
      if (!current.handoff) {
        const next = requestHandoff(tx, current, 'customer', this.now(), agent.id);
        if (mode === 'reply' && !next.humanRepliedAt) addMessage(tx, next, { role: 'agent', body: HANDOFF_TEXT },
          this.now(), botOf(agent));
      }
      await ws.db.commit(tx);
      return;
    }
    const answer = await composeAnswer(ws, this.deps, conversationId, agent, this.now());
    if (answer === null) return;
    // The check and the puts in one synchronous step: a person's message put before it silences the bot.
    let current = ws.get('conversation', conversationId);
    const handOver = answer.outcome !== 'answered' && !current?.handoff
      && uncertainInARow(ws, conversationId) + 1 >= handoffAfterUncertain;
    const tx = ws.db.begin();
    tx.put('answer', answer.id, answer);
    if (current && handOver) current = requestHandoff(tx, current, 'uncertain', this.now(), agent.id);
    if (mode === 'reply' && current && !current.humanRepliedAt && (!current.handoff || handOver)) {
      const body = handOver ? `${answer.text}\n\n${HANDOFF_TEXT}`.slice(0, 4000) : botMessageText(answer);
      addMessage(tx, current, { role: 'agent', body }, this.now(), botOf(agent), answer.id);
    }
    await ws.db.commit(tx);
  }
}

/** The body of the conversation's newest message when it is the customer's. */
function newestCustomerMessage(ws: Workspace, conversationId: string): string | undefined {
  const index = ws.conversations.messages.of(conversationId);
  if (!index) return undefined;
  for (const at of index.desc()) {
    const m = ws.get('message', index.idAt(at));
    return m?.role === 'user' ? m.body : undefined;
  }
  return undefined;
}

/** How many of the conversation's newest answers, in a row, were not `answered`. */
function uncertainInARow(ws: Workspace, conversationId: string): number {
  const index = ws.answers.of(conversationId);
  let n = 0;
  if (index) {
    for (const at of index.desc()) {
      if (ws.get('answer', index.idAt(at))?.outcome === 'answered') break;
      n++;
    }
  }
  return n;
}
