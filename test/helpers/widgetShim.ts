/**
 * A stand-in for the widget API (DESIGN §11, docs/widget.md) for the widget's browser test while the server has no
 * `/widget/v1` routes: a node:http server that serves `/widget.js` from the real server and answers the widget's
 * calls (sessions `svcs_…`, conversations, messages, handoff, `GET /widget/v1/stream?session=`) through the real
 * REST API with a full-access key, with CORS only for the agent's stored `allowedOrigins`. Only what the widget
 * script uses; the real routes replace it (the test prefers them when the server answers `/widget/v1/sessions`).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { TestServer } from './server.js';

interface Visitor { id: string; conversations: Set<string> }

export async function startWidgetShim(srv: TestServer, agentId: string): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new Map<string, Visitor>();
  const visitors = new Map<string, Visitor>();
  const agent = () => srv.store.workspace(srv.workspaceId)!.get('agent', agentId) as { widgetKey: string; allowedOrigins?: string[] };
  const api = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(srv.url + path, { method, headers: { Authorization: `Bearer ${srv.key}`, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: r.status, body: await r.json() as Record<string, any> };
  };
  const streams = new Set<ServerResponse>();
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/widget.js') {
      const r = await fetch(srv.url + '/widget.js');
      res.writeHead(r.status, { 'Content-Type': r.headers.get('content-type') ?? 'text/javascript' }).end(Buffer.from(await r.arrayBuffer()));
      return;
    }
    const origin = req.headers.origin;
    const allowed = typeof origin === 'string' && (agent().allowedOrigins ?? []).includes(origin);
    const cors: Record<string, string> = allowed ? { 'Access-Control-Allow-Origin': origin, Vary: 'Origin' } : {};
    const send = (status: number, body: unknown) => res.writeHead(status, { ...cors, 'Content-Type': 'application/json' }).end(JSON.stringify(body));
    if (!allowed) { res.writeHead(403, { 'Content-Type': 'application/json' }).end('{"code":"origin_not_allowed","error":"origin not allowed"}'); return; }
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { ...cors, 'Access-Control-Allow-Methods': 'GET, POST', 'Access-Control-Allow-Headers': 'Authorization, Content-Type', 'Access-Control-Max-Age': '600' }).end();
      return;
    }
    let raw = '';
    for await (const c of req) raw += c;
    const body = raw ? JSON.parse(raw) as Record<string, any> : {};
    const bearer = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    if (url.pathname === '/widget/v1/sessions' && req.method === 'POST') {
      if (bearer !== agent().widgetKey) return void send(401, { code: 'unauthorized', error: 'unknown widget key' });
      const visitorId = typeof body.visitorId === 'string' ? body.visitorId : `v_${randomBytes(8).toString('hex')}`;
      let v = visitors.get(visitorId);
      if (!v) visitors.set(visitorId, (v = { id: visitorId, conversations: new Set() }));
      const token = `svcs_${randomBytes(24).toString('base64url')}`;
      sessions.set(token, v);
      return void send(201, { session: { token, expiresAt: new Date(Date.now() + 86_400_000).toISOString(), visitorId, customer: { id: visitorId, name: null, email: null, identitySource: 'anonymous' } } });
    }
    const token = url.pathname === '/widget/v1/stream' ? url.searchParams.get('session') ?? '' : bearer;
    const v = sessions.get(token);
    if (!v) return void send(401, { code: 'unauthorized', error: 'unknown session' });
    if (url.pathname === '/widget/v1/stream') {
      res.writeHead(200, { ...cors, 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store' });
      res.write('retry: 1000\n\n');
      streams.add(res);
      const ac = new AbortController();
      res.on('close', () => { ac.abort(); streams.delete(res); });
      fetch(`${srv.url}/api/v1/events/stream?type=message.created`, { signal: ac.signal, headers: { Authorization: `Bearer ${srv.key}`, Accept: 'text/event-stream' } }).then(async (r) => {
        let buf = '';
        for await (const chunk of r.body!) {
          buf += Buffer.from(chunk).toString('utf8');
          let end: number;
          while ((end = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, end + 2);
            buf = buf.slice(end + 2);
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (data && v.conversations.has(JSON.parse(data).data.object.conversationId)) res.write(block);
          }
        }
      }).catch(() => {});
      return;
    }
    const m = /^\/widget\/v1\/conversations(?:\/([^/]+)\/(messages|handoff))?$/.exec(url.pathname);
    if (!m) return void send(404, { code: 'not_found', error: 'no such route' });
    if (!m[1] && req.method === 'POST') {
      const c = await api('POST', '/api/v1/conversations', { subject: String(body.body).slice(0, 80), customer: { email: `${v.id}@visitors.invalid` } });
      const msg = await api('POST', `/api/v1/conversations/${c.body.conversation.id}/messages`, { role: 'user', body: body.body });
      v.conversations.add(c.body.conversation.id);
      return void send(201, { conversation: c.body.conversation, message: msg.body.message });
    }
    if (!m[1] || !v.conversations.has(m[1])) return void send(404, { code: 'not_found', error: 'no such conversation' });
    if (m[2] === 'handoff') return void send(200, { conversation: (await api('GET', `/api/v1/conversations/${m[1]}`)).body.conversation });
    if (req.method === 'POST') {
      const msg = await api('POST', `/api/v1/conversations/${m[1]}/messages`, { role: 'user', body: body.body });
      return void send(201, { message: msg.body.message });
    }
    return void send(200, (await api('GET', `/api/v1/conversations/${m[1]}/messages?limit=100`)).body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => { for (const s of streams) s.destroy(); server.closeAllConnections(); server.close(() => r()); }),
  };
}
