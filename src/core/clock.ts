/**
 * Time as a seam (docs/decisions.md#time-and-the-file-system-are-injected): production uses the system clock, tests
 * inject their own.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to: `advance(ms)`; for tests. */
export class ManualClock implements Clock {
  constructor(private t = Date.parse('2026-06-29T12:00:00.000Z')) {}
  now(): number { return this.t; }
  advance(ms: number): void { this.t += ms; }
  set(ms: number): void { this.t = ms; }
}

let isoMs = NaN;
let isoText = '';
/**
 * UTC ISO 8601 with milliseconds (docs/api.md#timestamps-and-ids). The last instant's text is kept: a write stamps its
 * records with the same instant. @throws RangeError for an invalid time.
 */
export const iso = (ms: number): string => {
  if (ms !== isoMs) { isoText = new Date(ms).toISOString(); isoMs = ms; }
  return isoText;
};
