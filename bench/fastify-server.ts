/**
 * The fastify peer of the reads comparison (bench/README.md, "Peers"): fastify 5 doing the
 * same work per request as our server and the bare baselines — the key check of
 * bench/peerAuth.ts in an `onRequest` hook (401 with our exact body) with its bookkeeping (request
 * id, token bucket, usage count, our server's headers), then the route answers the same record as
 * a JSON object.
 *
 * Serialization: `reply.send(obj)` with no response schema, so fastify serializes with plain
 * `JSON.stringify` (lib/reply.js `serialize()` falls back to it when the route has no
 * schema serializer) and sets `Content-Type: application/json; charset=utf-8`, as ours does.
 * A response schema would make fastify use fast-json-stringify, which writes only the declared
 * properties and checks nothing about the object: less work than our server, whose cached
 * answer is our own view of the record — so there is none here.
 *
 * Logger off (fastify's default): no log line per request. Our server's access log is part
 * of its figure; the table's `LOG_LEVEL` says which, and `--log-level warn` turns it off.
 *
 * fastify is loaded from `PEER_DIR` (the folder bench/peers.ts installed it into, outside the
 * project), never from the project's node_modules. Listens on 127.0.0.1 only and prints
 * `{"msg":"listening","port":…}` on stdout like the others.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Bookkeeping, JSON_TYPE, NOT_FOUND, UNAUTHORIZED, checkKey, forbidden, hasScope, loadPeerData, type PeerKey } from './peerAuth.js';

// The few parts of fastify's API used here (the project has no fastify types, on purpose).
interface Reply { code(n: number): Reply; header(k: string, v: string): Reply; send(body?: unknown): Reply }
interface Request { headers: Record<string, string | string[] | undefined>; params: Record<string, string>; peerKey?: PeerKey }
type Handler = (req: Request, reply: Reply) => void;
interface App {
  decorateRequest(name: string, value: unknown): void;
  addHook(name: 'onRequest', fn: (req: Request, reply: Reply, done: () => void) => void): void;
  get(path: string, handler: Handler): void;
  listen(o: { port: number; host: string }): Promise<string>;
  close(): Promise<void>;
  server: { address(): { port: number } | string | null };
}

const dir = process.env.PEER_DIR;
if (!dir) throw new Error('PEER_DIR (the folder fastify is installed in) is not set');
const requireFromPeers = createRequire(join(dir, 'package.json'));
const fastify = requireFromPeers('fastify') as (o: object) => App;
const version = (requireFromPeers('fastify/package.json') as { version: string }).version;

const { data, keys } = loadPeerData();
const issues = new Map<string, unknown>(Object.entries(data.issues));

const books = new Bookkeeping();
/** Sets a flat name, value list of headers on the reply (our server's header set, from {@link Bookkeeping}). */
function headers(reply: Reply, list: string[]): void { for (let i = 0; i < list.length; i += 2) reply.header(list[i], list[i + 1]); }

const app = fastify({ logger: false, keepAliveTimeout: 5000 });
app.decorateRequest('peerKey', undefined);
app.addHook('onRequest', (req, reply, done) => {
  const key = checkKey(keys, req.headers.authorization as string | undefined);
  if (!key) { headers(reply, books.anonymous()); reply.code(401).header('content-type', JSON_TYPE).send(UNAUTHORIZED); return; }
  req.peerKey = key;
  headers(reply, books.headers(key));
  done();
});
app.get('/api/v1/issues/:id', (req, reply) => {
  if (!hasScope(req.peerKey!, 'issues:read')) { reply.code(403).header('content-type', JSON_TYPE).send(forbidden('issues:read')); return; }
  const rec = issues.get(req.params.id);
  if (rec === undefined) { reply.code(404).header('content-type', JSON_TYPE).send(NOT_FOUND); return; }
  reply.send({ issue: rec });
});
app.get('/api/v1/conversations', (req, reply) => {
  if (!hasScope(req.peerKey!, 'conversations:read')) { reply.code(403).header('content-type', JSON_TYPE).send(forbidden('conversations:read')); return; }
  reply.send(data.conversationsPage);
});

await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
const addr = app.server.address();
process.stdout.write(`${JSON.stringify({ msg: 'listening', port: typeof addr === 'object' && addr ? addr.port : 0, fastify: version })}\n`);
process.on('SIGTERM', () => { void app.close().finally(() => process.exit(0)); setTimeout(() => process.exit(0), 2000).unref(); });
