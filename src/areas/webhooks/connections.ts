/**
 * The keep-alive connections deliveries go on (docs/api.md#webhook-deliveries): Node's own `http.Agent` and
 * `https.Agent`, at most `WEBHOOK_CONCURRENCY_PER_ENDPOINT` sockets per endpoint and `WEBHOOK_CONCURRENCY` in all. A
 * connection's key holds the endpoint and the addresses the host check returned, so an attempt never reuses a
 * connection made for another check (docs/api.md#webhook-endpoint-urls).
 */
import http from 'node:http';
import https from 'node:https';

/** How long a kept connection may stay idle before it is closed, ms. */
export const IDLE_MS = 4_000;

/** What an attempt adds to `http.request`'s options: the endpoint and its checked addresses. */
export interface PinnedOptions { pin: string }

/** The key of `options` as Node makes it, with the pin added. */
const pinned = (name: string, options: unknown): string => `${name}|${(options as Partial<PinnedOptions>).pin ?? ''}`;

class PinnedHttpAgent extends http.Agent {
  override getName(options?: http.ClientRequestArgs): string { return pinned(super.getName(options), options); }
}
class PinnedHttpsAgent extends https.Agent {
  override getName(options?: https.RequestOptions): string { return pinned(super.getName(options), options); }
}

/** The two agents of one dispatcher (see the module's comment). */
export class DeliveryAgents {
  readonly http: http.Agent;
  readonly https: https.Agent;

  /** @param perEndpoint sockets per endpoint and address set; @param total sockets of each agent in all. */
  constructor(perEndpoint: number, total: number) {
    // Node counts idle kept sockets in `maxTotalSockets` and does not close one to open another: at `total` an
    // endpoint's request would wait for another's idle socket to time out. The requests in use are bounded at `total`
    // by the dispatcher; idle ones may add as many.
    const o: http.AgentOptions = {
      keepAlive: true, maxSockets: perEndpoint, maxTotalSockets: 2 * total, maxFreeSockets: perEndpoint,
      timeout: IDLE_MS,
      scheduling: 'lifo',
    };
    this.http = new PinnedHttpAgent(o);
    this.https = new PinnedHttpsAgent(o);
  }

  /** The pin of an attempt to endpoint `endpointId` at `addresses` (the key part {@link getName} adds). */
  static pin(endpointId: string, addresses: readonly { address: string }[]): string {
    return `${endpointId}|${addresses.map((a) => a.address).join(',')}`;
  }

  /** Closes the idle connections of endpoint `endpointId` (deleted, disabled, or its url changed). */
  forget(endpointId: string): void {
    for (const agent of [this.http, this.https]) {
      for (const [name, sockets] of Object.entries(agent.freeSockets)) {
        if (name.includes(`|${endpointId}|`)) for (const s of sockets ?? []) s.destroy();
      }
    }
  }

  /** Closes every connection. */
  destroy(): void { this.http.destroy(); this.https.destroy(); }
}
