/** Customer ids per email, an index kept beside the conversations (docs/decisions.md#one-customer-id-per-email). */
import type { Persist } from '../../store/db.js';

/**
 * One customer id per email in a workspace (docs/decisions.md#one-customer-id-per-email), emails compared without case.
 * Each email keeps its first conversation's id and the number of conversations carrying it, so that an undone create
 * frees an email no conversation holds.
 */
export class CustomerIds {
  private byEmail = new Map<string, { id: string; conversations: number }>();

  /**
   * Saved in the snapshot block under `name` (docs/storage.md#snapshots): `emails`, `ids`, `counts` (conversations per
   * email, those of the block's records: compaction never drops a conversation).
   */
  persist(name: string): Persist {
    return {
      name,
      capture: () => {
        const emails = [...this.byEmail.keys()];
        const entries = [...this.byEmail.values()].map((e) => [e.id, e.conversations] as const);
        return () => ({ emails, ids: entries.map((e) => e[0]), counts: entries.map((e) => e[1]) });
      },
      restore: (cols, ctx) => {
        const emails = ctx.strings(cols.emails);
        const ids = ctx.strings(cols.ids);
        const counts = ctx.numbers(cols.counts);
        if (emails.length !== ids.length || ids.length !== counts.length) throw new Error('columns differ in length');
        const m = new Map<string, { id: string; conversations: number }>();
        for (let i = 0; i < emails.length; i++) m.set(emails[i], { id: ids[i], conversations: counts[i] });
        return () => { this.byEmail = m; };
      },
    };
  }

  /** The number of emails with an id. */
  get size(): number { return this.byEmail.size; }

  /** Applies a change of a conversation's customer from `before` to `after` (undefined: created or deleted). */
  apply(before: { id: string; email?: string } | undefined, after: { id: string; email?: string } | undefined): void {
    if (before !== undefined && after !== undefined && before.id === after.id && before.email === after.email) return;
    // An anonymous visitor (no email) has no entry.
    if (before?.email !== undefined) this.remove(before.email, before.id);
    if (after?.email !== undefined) this.add(after.email, after.id);
  }

  /** The customer id `email` has in the workspace, or undefined when no conversation has it. */
  idOf(email: string): string | undefined {
    return this.byEmail.get(email.toLowerCase())?.id;
  }

  /**
   * Counts a stored conversation whose customer is (`email`, `id`). A conversation stored with another id for a known
   * email (written before the rule was enforced) leaves the email's id as it is.
   */
  add(email: string, id: string): void {
    const key = email.toLowerCase();
    const entry = this.byEmail.get(key);
    if (!entry) this.byEmail.set(key, { id, conversations: 1 });
    else if (entry.id === id) entry.conversations++;
  }

  /** Uncounts a conversation added with {@link add} that is gone (undone). */
  remove(email: string, id: string): void {
    const key = email.toLowerCase();
    const entry = this.byEmail.get(key);
    if (entry && entry.id === id && --entry.conversations === 0) this.byEmail.delete(key);
  }
}
