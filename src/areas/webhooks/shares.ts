/**
 * How the delivery connections are shared (docs/api.md#webhook-deliveries): at most `WEBHOOK_CONCURRENCY` attempts at
 * once, `WEBHOOK_CONCURRENCY_PER_ENDPOINT` per endpoint, and no workspace above a quarter of them while another waits;
 * a workspace alone with work may use more, all but a quarter, kept free for a workspace whose deliveries come next
 * (docs/decisions.md#webhook-delivery-is-shared-fairly-between-workspaces).
 */

/** The attempts under way per workspace and per endpoint, and the room each has (see the module's comment). */
export class Shares {
  private readonly endpoints = new Map<string, number>();
  private readonly workspaces = new Map<string, number>();
  /** Attempts under way in all. */
  total = 0;
  /** The most one workspace holds while another waits. */
  readonly quarter: number;
  /** What a workspace alone with work leaves free. */
  private readonly reserve: number;

  /** @param overall `WEBHOOK_CONCURRENCY`; @param perEndpoint `WEBHOOK_CONCURRENCY_PER_ENDPOINT`. */
  constructor(readonly overall: number, readonly perEndpoint: number) {
    this.quarter = Math.max(1, Math.floor(overall / 4));
    this.reserve = overall >= 4 ? this.quarter : 0;
  }

  /** Attempts under way of endpoint `id`. */
  ofEndpoint(id: string): number { return this.endpoints.get(id) ?? 0; }
  /** Attempts under way of workspace `id`. */
  ofWorkspace(id: string): number { return this.workspaces.get(id) ?? 0; }

  /** Attempts workspace `ws` may start now: up to its quarter, or, `alone` (none other waits), all but the reserve. */
  room(ws: string, alone: boolean): number {
    const free = this.overall - this.total;
    if (!alone) return Math.max(0, Math.min(free, this.quarter - this.ofWorkspace(ws)));
    return Math.max(0, Math.min(free, this.overall - this.reserve - this.total));
  }

  /** An attempt of endpoint `endpoint` of workspace `ws` starts. */
  take(ws: string, endpoint: string): void {
    this.total++;
    this.endpoints.set(endpoint, this.ofEndpoint(endpoint) + 1);
    this.workspaces.set(ws, this.ofWorkspace(ws) + 1);
  }

  /** An attempt taken with {@link take} ended. */
  give(ws: string, endpoint: string): void {
    this.total--;
    drop(this.endpoints, endpoint);
    drop(this.workspaces, ws);
  }
}

function drop(m: Map<string, number>, key: string): void {
  const n = (m.get(key) ?? 1) - 1;
  if (n <= 0) m.delete(key); else m.set(key, n);
}
