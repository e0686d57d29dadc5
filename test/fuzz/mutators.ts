/**
 * The fuzzer's mutations, by part of the request: the body's (bodyMutators.ts), then the query
 * string's, path's, keys', idempotency's, headers' and method's (requestMutators.ts).
 */
import type { Mutator } from './mutatorKit.js';
import { BODY_MUTATORS } from './bodyMutators.js';
import { REQUEST_MUTATORS } from './requestMutators.js';

/** Every mutation, in the order the weighted pick walks them (a seed names the same choices). */
export const MUTATORS: Mutator[] = [...BODY_MUTATORS, ...REQUEST_MUTATORS];
