/**
 * Who calls the widget API (docs/api.md#live-chat): a widget key (`svcw_…`, to open a session) or a session token
 * (`svcs_<workspace id>_<random>`, looked up by its hash in the workspace it names, no scan), the Origin checked
 * against the agent's `allowedOrigins`, and the CORS headers that go on every answer for an allowed origin.
 */
import type { IncomingMessage } from 'node:http';
import { ApiError } from '../../http/errors.js';
import type { Principal, RouteAuth } from '../../http/route.js';
import { hashKey, randomBase62 } from '../../auth/keys.js';
import type { Clock } from '../../core/clock.js';
import { WorkspaceMovedError, type Store } from '../../store/store.js';
import type { Workspace } from '../../domain/workspace.js';
import type { Agent } from '../agents.js';
import { canonicalOrigin, corsHeaders, preflightHeaders } from './origins.js';
import type { WidgetSession } from './model.js';
import type { Result } from '../../http/route.js';

export const SESSION_PREFIX = 'svcs_';
const BEARER_WIDGET_KEY = /^[Bb][Ee][Aa][Rr][Ee][Rr] +(svcw_[0-9A-Za-z]{33}) *$/;
const SESSION_TOKEN = /^svcs_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})_[0-9A-Za-z]{43}$/;
const BEARER_SESSION = /^[Bb][Ee][Aa][Rr][Ee][Rr] +(\S+) *$/;

/** A new session token of workspace `workspaceId`: the id lets the server (or a proxy) find it without a scan. */
export const newSessionToken = (workspaceId: string): string => `${SESSION_PREFIX}${workspaceId}_${randomBase62(32)}`;

/** What a widget route's handler reads of its caller. */
export interface WidgetCaller { ws: Workspace; agent: Agent; session?: WidgetSession; origin: string | undefined }

const unauthorized = (detail: string) => new ApiError('widget_unauthorized', detail);

export class WidgetAuth {
  /**
   * `newSession(req, agentId)` spends a new session of the request's client (the limit, 429 past it); `client(req)`
   * names the client address, so that the visitors of one widget key do not share one request bucket.
   */
  constructor(private readonly store: Store<Workspace>, private readonly clock: Clock,
    private readonly newSession: (req: IncomingMessage, agentId: string) => void,
    private readonly client: (req: IncomingMessage) => string = () => '') {}

  /** `Authorization: Bearer svcw_…`: opens sessions (POST /widget/v1/sessions). */
  readonly key: RouteAuth = { scheme: 'widgetKey', authenticate: (req, headers) => {
    const m = BEARER_WIDGET_KEY.exec(req.headers.authorization ?? '');
    const found = m === null ? undefined : this.agentOfKey(m[1]);
    const moved = found || m === null ? undefined : this.store.movedWith('widgetKeys', m[1]);
    if (moved) throw new WorkspaceMovedError(moved.id, false);
    if (!found) { this.unknownCaller(req, headers); throw unauthorized('send Authorization: Bearer svcw_… (the '
      + "agent's widget key)"); }
    const p = this.principal(req, headers, found.ws, found.agent, undefined,
      `widget-key:${found.agent.id}:${this.client(req)}`);
    this.newSession(req, found.agent.id);
    return p;
  } };

  /** `Authorization: Bearer svcs_…` (or `?session=svcs_…` where `query` is set, for EventSource). */
  session(query: boolean): RouteAuth {
    return { scheme: 'widgetSession', authenticate: (req, headers) => {
      let token = BEARER_SESSION.exec(req.headers.authorization ?? '')?.[1];
      if (token === undefined && query) token = new URL(req.url ?? '/', 'http://x').searchParams.get('session')
        ?? undefined;
      const m = token === undefined ? null : SESSION_TOKEN.exec(token);
      const ws = m === null ? undefined : this.store.workspace(m[1]);
      const session = ws?.get('widget_session', hashKey(token!));
      const agent = session && ws!.get('agent', session.agentId);
      if (!ws || !session || !agent) { this.unknownCaller(req, headers); throw unauthorized(
        'send Authorization: Bearer svcs_… (a session from POST /widget/v1/sessions)'); }
      if (Date.parse(session.expiresAt) <= this.clock.now()) { this.unknownCaller(req, headers); throw unauthorized(
        'the session has expired; open a new one'); }
      return this.principal(req, headers, ws, agent, session, `widget-session:${session.id}`);
    } };
  }

  /**
   * The answer to a preflight (`OPTIONS /widget/v1/…`): 204 with the Access-Control-Allow-* headers when some agent of
   * the server allows the Origin (a preflight carries no key), else 403 `origin_not_allowed`.
   */
  preflight(req: IncomingMessage): Result {
    const origin = this.knownOrigin(req);
    if (origin === undefined) throw new ApiError('origin_not_allowed', 'no widget on this server allows this origin');
    const headers: Record<string, string> = {};
    const list = preflightHeaders(origin);
    for (let i = 0; i < list.length; i += 2) headers[list[i]] = list[i + 1];
    return { status: 204, body: null, headers };
  }

  private principal(req: IncomingMessage, headers: string[], ws: Workspace, agent: Agent,
    session: WidgetSession | undefined, limitKey: string): Principal {
    const allowed = agent.allowedOrigins ?? [];
    const raw = req.headers.origin;
    const origin = raw === undefined ? undefined : canonicalOrigin(raw);
    if (raw !== undefined && (origin === undefined || !allowed.includes(origin))) throw new ApiError(
      'origin_not_allowed', `${raw.slice(0, 100)} is not in the agent's allowedOrigins`);
    if (origin !== undefined) headers.push(...corsHeaders(origin));
    if (!agent.enabled) throw unauthorized('the agent is disabled');
    if (allowed.length === 0) throw new ApiError('origin_not_allowed', 'the agent allows no origins');
    const data: WidgetCaller = { ws, agent, session, origin };
    return { workspaceId: ws.id, limitKey, data };
  }

  /** A caller not known yet: CORS headers when some agent allows its origin, so the browser can read the 401. */
  private unknownCaller(req: IncomingMessage, headers: string[]): void {
    const origin = this.knownOrigin(req);
    if (origin !== undefined) headers.push(...corsHeaders(origin));
  }

  private knownOrigin(req: IncomingMessage): string | undefined {
    const raw = req.headers.origin;
    const origin = raw === undefined ? undefined : canonicalOrigin(raw);
    if (origin === undefined) return undefined;
    for (const id of this.store.system.table('workspace').keys()) {
      const ws = this.workspaceOrNone(id);
      if (ws?.widget.origins.has(origin)) return origin;
    }
    return undefined;
  }

  private agentOfKey(key: string): { ws: Workspace; agent: Agent } | undefined {
    for (const id of this.store.system.table('workspace').keys()) {
      const ws = this.workspaceOrNone(id);
      const agentId = ws?.widget.agentByKey.get(key);
      const agent = agentId === undefined ? undefined : ws!.get('agent', agentId);
      if (agent) return { ws: ws!, agent };
    }
    return undefined;
  }

  /** A served workspace, or undefined (a quarantined one is skipped: the others keep answering). */
  private workspaceOrNone(id: string): Workspace | undefined {
    try { return this.store.workspace(id); } catch { return undefined; }
  }
}
