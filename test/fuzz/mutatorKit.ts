/**
 * What every mutation shares: the {@link Mutator} shape and small helpers over a draft.
 */
import { type Draft, NO_BODY } from './types.js';
import type { Fuzzer } from './fuzzer.js';
import { MiB } from '../../src/http/route.js';
import { getAt, RawBytes, type Seg, type Slot, slotsOf } from './json.js';

/** One kind of mutation: how often it is picked, when it applies, how it changes a draft. */
export interface Mutator {
  name: string;
  weight: number;
  heavy?: boolean;
  applies(d: Draft, f: Fuzzer): boolean;
  /** Changes `d`; returns the mutation's name (with detail), or null when it could not apply. */
  apply(d: Draft, f: Fuzzer): string | null;
}

/** The draft has a JSON body (of a route that takes one) that can be changed value by value. */
export const hasBody = (d: Draft): boolean => !!d.route?.body && d.body !== NO_BODY && !(d.body instanceof RawBytes) && !d.raw;
/** The draft is for a route that takes a body. */
export const bodyRoute = (d: Draft): boolean => !!d.route?.body && !d.raw;
/** The places in the draft's body. */
export const bodySlots = (d: Draft): Slot[] => slotsOf(d.route?.body, d.body);
/** The body limit of the draft's route, in bytes. */
export const limitOf = (d: Draft): number => d.route?.bodyLimit ?? MiB;

/** The body is invalid while the value at `path` is still `value`. */
export function claimAt(d: Draft, path: Seg[], value: unknown, reason: string): void {
  d.certain.push((body) => (getAt(body, path) === value ? reason : undefined));
}

/** Gives the draft a valid body (and JSON media type) when it has none. */
export function ensureBody(d: Draft, f: Fuzzer): void {
  if (d.body === NO_BODY && d.route?.body) d.body = f.validValue(d.route.body, '', d.ws);
  d.headers['Content-Type'] ??= 'application/json';
}

/** Values of every JSON type, for a property of another type. */
export const WRONG_VALUES: unknown[] = [0, 1, -1, 1.5, true, false, null, [], {}, 'str', '', [1, 2], { a: 1 }, [null], ['x'], 1e21];
