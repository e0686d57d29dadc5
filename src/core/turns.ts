/**
 * Main-thread turns for heavy work (docs/reliability.md#ingestion-and-search): work that cannot leave the main thread
 * waits for {@link nextTurn} between steps. One `setImmediate` hands out one turn per loop iteration, so I/O is polled
 * between turns and a request waits for at most one step.
 */

const waiters: Array<() => void> = [];
let scheduled = false;

function grant(): void {
  scheduled = false;
  const next = waiters.shift();
  // Scheduled before the waiter runs: the next turn is in the next loop iteration at the earliest.
  if (waiters.length > 0) schedule();
  next?.();
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(grant);
}

/** Resolves at the caller's next turn (after earlier waiters and an I/O poll); then work a few ms at most. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiters.push(resolve);
    schedule();
  });
}

/** How many callers wait for a turn (tests). */
export function waitingForTurns(): number {
  return waiters.length;
}
