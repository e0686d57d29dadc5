/**
 * How the client aggregates are saved in the snapshot block (docs/storage.md#snapshots): one state per side — the
 * conversations' on the `conversation` listener, the issues' on the `issue` one — so that each record type is restored,
 * or replayed, on its own. Per group: its key, name and domain, its counts, and the sorted creation and activity times
 * of its members.
 */
import type { Columns, Persist, RestoreContext } from '../../store/db.js';
import { SortedBag } from '../analytics/sortedBag.js';
import type { ClientIndex } from './aggregates.js';
import { newConversationSide, newSide, type ConversationSide, type Side } from './group.js';

/** The columns every side has: groups (`keys`, `names`, `domains`: '' for none) and their times. */
interface SideColumns {
  keys: string[]; names: string[]; domains: string[];
  seenN: number[]; seen: string[]; activityN: number[]; activity: string[];
}

const sideColumns = (): SideColumns =>
  ({ keys: [], names: [], domains: [], seenN: [], seen: [], activityN: [], activity: [] });

/** Adds one group's side to `cols` (values copied: the capture outlives changes). */
function pushSide(cols: SideColumns, key: string, name: string, domain: string | null, side: Side): void {
  cols.keys.push(key); cols.names.push(name); cols.domains.push(domain ?? '');
  const seen = side.seen.values();
  const activity = side.activity.values();
  cols.seenN.push(seen.length); for (const t of seen) cols.seen.push(t);
  cols.activityN.push(activity.length); for (const t of activity) cols.activity.push(t);
}

const columnsOf = (c: SideColumns): Columns => ({
  keys: c.keys, names: c.names, domains: c.domains,
  seenN: Uint32Array.from(c.seenN), seen: c.seen, activityN: Uint32Array.from(c.activityN), activity: c.activity,
});

/** One group's side as the block holds it. */
interface SavedSide {
  key: string; name: string; domain: string | null; seen: SortedBag<string>; activity: SortedBag<string>;
}
/** Reads back the groups of {@link columnsOf}: key, name, domain, a side with its times. @throws Error if malformed. */
function readSides(cols: Columns, ctx: RestoreContext): SavedSide[] {
  const keys = ctx.strings(cols.keys);
  const names = ctx.strings(cols.names);
  const domains = ctx.strings(cols.domains);
  const seenN = ctx.numbers(cols.seenN);
  const seen = ctx.strings(cols.seen);
  const activityN = ctx.numbers(cols.activityN);
  const activity = ctx.strings(cols.activity);
  const n = keys.length;
  if (names.length !== n || domains.length !== n || seenN.length !== n || activityN.length !== n) {
    throw new Error('columns differ in length');
  }
  const out: SavedSide[] = [];
  let s = 0, a = 0;
  for (let i = 0; i < n; i++) {
    if (seenN[i] !== activityN[i] || seenN[i] === 0) throw new Error('a group has no member or times differ in number');
    const groupSeen = SortedBag.fromSorted(seen.slice(s, (s += seenN[i])));
    const groupActivity = SortedBag.fromSorted(activity.slice(a, (a += activityN[i])));
    if (s > seen.length || a > activity.length) throw new Error('times missing');
    const domain = domains[i] === '' ? null : domains[i];
    out.push({ key: keys[i], name: names[i], domain, seen: groupSeen, activity: groupActivity });
  }
  if (s !== seen.length || a !== activity.length) throw new Error('times left over');
  return out;
}

/**
 * The conversations' side, under `conversation.clients/1`: the side columns, `counts` (open, waiting, solved per
 * group), `customersN` / `customerIds` / `customerCounts` (conversations per customer id, group after group).
 */
export function persistConversationSide(idx: ClientIndex): Persist {
  return {
    name: 'conversation.clients/1',
    capture: () => {
      const cols = sideColumns();
      const counts: number[] = [];
      const customersN: number[] = [];
      const customerIds: string[] = [];
      const customerCounts: number[] = [];
      for (const g of idx.groups.values()) {
        const c = g.conversations;
        if (c.count === 0) continue;
        pushSide(cols, g.key, g.name, g.domain, c);
        counts.push(c.open, c.waiting, c.solved);
        customersN.push(c.customers.size);
        for (const [id, k] of c.customers) { customerIds.push(id); customerCounts.push(k); }
      }
      return () => ({
        ...columnsOf(cols), counts: Uint32Array.from(counts),
        customersN: Uint32Array.from(customersN), customerIds, customerCounts: Uint32Array.from(customerCounts),
      });
    },
    restore: (cols, ctx) => {
      const groups = readSides(cols, ctx);
      const counts = ctx.numbers(cols.counts);
      const customersN = ctx.numbers(cols.customersN);
      const customerIds = ctx.strings(cols.customerIds);
      const customerCounts = ctx.numbers(cols.customerCounts);
      const n = groups.length;
      if (counts.length !== n * 3 || customersN.length !== n || customerCounts.length !== customerIds.length) {
        throw new Error('columns differ in length');
      }
      const sides: ConversationSide[] = [];
      let at = 0;
      for (let i = 0; i < groups.length; i++) {
        const { seen, activity } = groups[i];
        const side: ConversationSide = { ...newConversationSide(), count: seen.size, seen, activity };
        side.open = counts[i * 3]; side.waiting = counts[i * 3 + 1]; side.solved = counts[i * 3 + 2];
        let sum = 0;
        for (const end = at + customersN[i]; at < end && at < customerIds.length; at++) {
          side.customers.set(customerIds[at], customerCounts[at]);
          sum += customerCounts[at];
        }
        if (sum !== side.count || side.open + side.waiting + side.solved !== side.count) {
          throw new Error('group counts do not add up');
        }
        sides.push(side);
      }
      if (at !== customerIds.length) throw new Error('customers left over');
      return () => {
        groups.forEach((x, i) => { idx.group(x.key, x.name, x.domain).conversations = sides[i]; });
      };
    },
  };
}

/** The issues' side, under `issue.clients/1`: the side columns alone (a side's count is its number of times). */
export function persistIssueSide(idx: ClientIndex): Persist {
  return {
    name: 'issue.clients/1',
    capture: () => {
      const cols = sideColumns();
      for (const g of idx.groups.values()) if (g.issues.count > 0) pushSide(cols, g.key, g.name, g.domain, g.issues);
      return () => columnsOf(cols);
    },
    restore: (cols, ctx) => {
      const groups = readSides(cols, ctx);
      return () => {
        for (const x of groups) {
          const side = { ...newSide(), count: x.seen.size, seen: x.seen, activity: x.activity };
          idx.group(x.key, x.name, x.domain).issues = side;
        }
      };
    },
  };
}
