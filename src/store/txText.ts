/**
 * Which operations a transaction's log line holds, and their JSON texts (docs/storage.md#transactions):
 * each record once, as the last thing the transaction did to it; a pre-serialized value spliced in
 * as given, and, for a put, the value's part of the text (what a record held as bytes keeps,
 * docs/storage.md#memory). Used by `Tx.written` and `Db.commit`.
 */
import type { JsonText } from './log/log.js';
import type { Op } from './dbTypes.js';

/**
 * Which operations of a transaction its log line holds, in order (docs/storage.md#transactions):
 * each record (type, id) once, as the last thing the transaction did to it. A record it both
 * created (absent before, `undo` says) and deleted is left out: replay would only add and remove it.
 *
 * Each record is written at the place of the first operation on it, so it still comes before the
 * records made after it that point to it (a conversation before its messages). Replay gives the
 * same records and indexes either way: listeners keep state per record (docs/storage.md#indexes).
 *
 * `ops` and `undo` are parallel. Returns the indexes into `ops` to write, or null when no record
 * repeats (the common case): then every operation is written, in order.
 */
export function writtenOps(ops: readonly Op[], undo: ReadonlyArray<readonly [string, string, object | undefined]>):
  readonly number[] | null {
  if (ops.length < 2) return null;
  // A handful of operations are compared pairwise, without a key string and a Map per operation.
  if (ops.length <= 16) {
    let repeats = false;
    for (let i = 1; i < ops.length && !repeats; i++) {
      for (let j = 0; j < i; j++) if (ops[i][2] === ops[j][2] && ops[i][1] === ops[j][1]) { repeats = true; break; }
    }
    if (!repeats) return null;
  }
  /** Per record, in the order of the first operation on it: [first, last] operation index. */
  const slots: Array<[number, number]> = [];
  const byKey = new Map<string, number>();
  for (let i = 0; i < ops.length; i++) {
    const key = `${ops[i][1]}\u0000${ops[i][2]}`;
    const slot = byKey.get(key);
    if (slot === undefined) { byKey.set(key, slots.length); slots.push([i, i]); } else slots[slot][1] = i;
  }
  if (slots.length === ops.length) return null;
  const out: number[] = [];
  for (const [first, last] of slots) {
    if (ops[last][0] === 'd' && undo[first][2] === undefined) continue; // created and deleted here
    out.push(last);
  }
  return out;
}

/**
 * The JSON text of operation `op`, taking its pre-serialized value `raw` when it has one (a put
 * whose record was serialized elsewhere: its pieces are spliced in as they are, never joined).
 */
export function opJson(op: Op, raw: JsonText | undefined): JsonText {
  if (raw === undefined) return JSON.stringify(op);
  const head = `["p",${JSON.stringify(op[1])},${JSON.stringify(op[2])},`;
  if (typeof raw === 'string') return head + raw + ']';
  return raw instanceof Uint8Array ? [head, raw, ']'] : [head, ...raw, ']'];
}

/**
 * The value's JSON text inside `text`, the text {@link opJson} made for put `op` with `raw`: the
 * pre-serialized value as it was given, or the part of `JSON.stringify(op)` after its head
 * `["p",<type>,<id>,` and before its closing `]` — the same characters, not serialized again.
 */
export function putValueText(op: Op, raw: JsonText | undefined, text: JsonText): JsonText {
  if (raw !== undefined) return raw;
  const s = text as string;
  return s.slice(5 + JSON.stringify(op[1]).length + 1 + JSON.stringify(op[2]).length + 1, s.length - 1);
}

/**
 * The JSON texts of the operations `tx`'s log line holds, in order ({@link Tx.written}); for each
 * written put, `put(i, value text)` is called when given (`i` its index in `tx.ops`).
 */
export function writtenTexts(tx: {
  readonly ops: readonly Op[]; readonly raw: ReadonlyArray<JsonText | undefined> | undefined;
    readonly undo: ReadonlyArray<readonly [string, string, object | undefined]> },
  put?: (i: number, value: () => JsonText) => void): JsonText[] {
  const { ops, raw } = tx;
  const order = writtenOps(ops, tx.undo);
  const n = order === null ? ops.length : order.length;
  const out = new Array<JsonText>(n);
  for (let k = 0; k < n; k++) {
    const i = order === null ? k : order[k];
    const op = ops[i];
    const text = opJson(op, raw?.[i]);
    out[k] = text;
    if (put !== undefined && op[0] === 'p') put(i, () => putValueText(op, raw?.[i], text));
  }
  return out;
}
