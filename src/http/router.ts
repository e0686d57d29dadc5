/**
 * Method + path-template routing (docs/api.md#check-order), after `lukeed/trouter`'s two-method interface: `add(method,
 * template, value)` and `find(method, path)`. Templates use OpenAPI's `{param}` segments; static segments win over
 * parameters.
 */
interface Node<V> {
  statics: Map<string, Node<V>>;
  param?: { name: string; node: Node<V> };
  methods: Map<string, V>;
}

const node = <V>(): Node<V> => ({ statics: new Map(), methods: new Map() });

export type Match<V> =
  | { kind: 'found'; value: V; params: Record<string, string> }
  | { kind: 'method_not_allowed'; allow: string[] }
  | { kind: 'not_found' };

/** The one answer for every path no route has (never changed by callers). */
const NOT_FOUND: Match<never> = Object.freeze({ kind: 'not_found' });

export class Router<V> {
  private readonly root: Node<V> = node();

  /** Registers `value` for `method` on `template` (e.g. `/api/v1/issues/{issueId}`). */
  add(method: string, template: string, value: V): void {
    let n = this.root;
    for (const seg of template.split('/').slice(1)) {
      const m = /^\{(\w+)\}$/.exec(seg);
      if (m) {
        if (!n.param) n.param = { name: m[1], node: node() };
        else if (n.param.name !== m[1]) throw new Error(`conflicting parameter names at ${template}`);
        n = n.param.node;
      } else {
        let next = n.statics.get(seg);
        if (!next) { next = node(); n.statics.set(seg, next); }
        n = next;
      }
    }
    if (n.methods.has(method)) throw new Error(`duplicate route ${method} ${template}`);
    n.methods.set(method, value);
  }

  /** Finds the route for `method` and `path` (no query string); only a parameter's value is percent-decoded. */
  find(method: string, path: string): Match<V> {
    if (path.charCodeAt(0) !== 47 /* / */) return NOT_FOUND;
    const params: Record<string, string> = {};
    const n = this.walk(this.root, path, 1, params);
    if (!n || n.methods.size === 0) return NOT_FOUND;
    const value = n.methods.get(method) ?? (method === 'HEAD' ? n.methods.get('GET') : undefined);
    if (value === undefined) {
      const allow = [...n.methods.keys()];
      if (allow.includes('GET')) allow.push('HEAD');
      return { kind: 'method_not_allowed', allow };
    }
    return { kind: 'found', value, params };
  }

  /** The node for the segments of `path` from index `start` on (past its end: `n` itself). */
  private walk(n: Node<V>, path: string, start: number, params: Record<string, string>): Node<V> | null {
    if (start > path.length) return n;
    let end = path.indexOf('/', start);
    if (end === -1) end = path.length;
    const seg = path.slice(start, end);
    const st = n.statics.get(seg);
    if (st) { const r = this.walk(st, path, end + 1, params); if (r && r.methods.size) return r; }
    if (n.param && seg !== '') {
      let decoded = seg;
      if (seg.includes('%')) { try { decoded = decodeURIComponent(seg); } catch { return null; } }
      const r = this.walk(n.param.node, path, end + 1, params);
      if (r && r.methods.size) { params[n.param.name] = decoded; return r; }
    }
    return null;
  }
}
