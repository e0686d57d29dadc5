/**
 * A log's retention rules (docs/storage.md#compaction): which records a compaction keeps, asked
 * of the record or, for a record held as bytes, of its JSON text when the rule can tell from it
 * (docs/storage.md#memory). Registered through `Db.retain` (src/store/db.ts), read by the
 * compaction run (src/store/snapshot/compactionRun.ts).
 */

/** One rule (see `Db.retain`): `keepText`, when there is one, answers from a record's text. */
interface Rule { keep: (rec: object) => boolean; keepText?: (json: string) => boolean | undefined }

export class Retention {
  private readonly rules = new Map<string, Rule[]>();

  /** Adds a rule of `type`: `keep`, and `keepText` when it answers from the text (see `Db.retain`). */
  add(type: string, keep: (rec: object) => boolean, keepText: ((json: string) =>
    boolean | undefined) | undefined): void {
    const list = this.rules.get(type);
    if (list === undefined) this.rules.set(type, [{ keep, keepText }]); else list.push({ keep, keepText });
  }

  /** Whether `type` has a rule. */
  has(type: string): boolean { return this.rules.has(type); }

  /** Whether compaction keeps `rec` (see `Db.retain`). */
  retained(type: string, rec: object): boolean {
    return this.rules.get(type)?.every((r) => r.keep(rec)) ?? true;
  }

  /**
   * Whether compaction keeps a record of `type` from its JSON text alone (undefined: a rule
   * cannot tell), or null when a rule of `type` has no text answer (see `Db.retain`).
   */
  retainedText(type: string): ((json: string) => boolean | undefined) | null {
    const rules = this.rules.get(type);
    if (rules === undefined) return () => true;
    if (rules.some((r) => r.keepText === undefined)) return null;
    return (json) => {
      let all: boolean | undefined = true;
      for (const r of rules) {
        const keep = r.keepText!(json);
        if (keep === false) return false;
        if (keep === undefined) all = undefined;
      }
      return all;
    };
  }
}
