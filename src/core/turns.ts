/**
 * Main-thread turns for heavy work (README "Reliability": ingestion never stalls other requests
 * by more than 50 ms). Work that cannot leave the main thread — parsing a large request body,
 * encoding a large log line, assembling an ingestion result — waits for {@link nextTurn} between
 * its steps. Turns are handed out one per event-loop iteration, first come first served, from a
 * `setImmediate` callback: Node runs only the immediates that were queued before its check phase
 * began, so between two turns the loop always polls for I/O, and a `/healthz` or a read that
 * arrives meanwhile waits for at most one step — however many heavy requests are running.
 * (Each waiter yielding with its own `setImmediate` would not do: ten of them would all run in
 * the same check phase, back to back.)
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

/**
 * Resolves at the caller's next turn: after every waiter queued before it, and after the event
 * loop has polled for I/O at least once. The caller should then work for at most a few
 * milliseconds before it waits again.
 */
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
