/**
 * A log's retention rules (docs/storage.md#compaction): which records a compaction keeps, asked
 * of the record or, for a record held as bytes, of its JSON text when the rule can tell from it
 * (docs/storage.md#memory). Registered through `Db.retain` (src/store/db.ts), read by the
 * compaction run (src/store/compactor.ts).
 */
export class Retention {
  /** Per type, its rules (see `Db.retain`). */
  private readonly keep = new Map<string, Array<(rec: object) => boolean>>();
  /** Per type, parallel to {@link keep}: each rule's answer from a text, when it has one. */
  private readonly keepText = new Map<string, Array<((json: string) => boolean | undefined) | undefined>>();

  /** Adds a rule of `type`: `keep`, and `keepText` when it answers from the text (see `Db.retain`). */
  add(type: string, keep: (rec: object) => boolean, keepText: ((json: string) => boolean | undefined) | undefined): void {
    const list = this.keep.get(type);
    if (list === undefined) this.keep.set(type, [keep]); else list.push(keep);
    const texts = this.keepText.get(type);
    if (texts === undefined) this.keepText.set(type, [keepText]); else texts.push(keepText);
  }

  /** Whether `type` has a rule. */
  has(type: string): boolean { return this.keep.has(type); }

  /** Whether compaction keeps `rec` (see `Db.retain`). */
  retained(type: string, rec: object): boolean {
    const fns = this.keep.get(type);
    return fns === undefined || fns.every((f) => f(rec));
  }

  /**
   * Whether compaction keeps a record of `type` from its JSON text alone (undefined: a rule
   * cannot tell), or null when a rule of `type` has no text answer (see `Db.retain`).
   */
  retainedText(type: string): ((json: string) => boolean | undefined) | null {
    const fns = this.keepText.get(type);
    if (fns === undefined) return () => true;
    if (fns.some((f) => f === undefined)) return null;
    return (json) => {
      let all: boolean | undefined = true;
      for (const f of fns) {
        const keep = f!(json);
        if (keep === false) return false;
        if (keep === undefined) all = undefined;
      }
      return all;
    };
  }
}
