/**
 * Opaque cursors for cursor pagination (docs/api.md#lists). A cursor is the last returned item's sort key, bound by an
 * HMAC to the workspace and the list, so a cursor from another workspace or list — or an edited one — is a 400, never a
 * page of someone else's order.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { invalid } from './errors.js';

/** How many cursors each cache below holds before it is emptied (a bound, not a working set). */
const CACHE_SIZE = 4096;

export class CursorCodec {
  /** Cursors made and checked lately (a pure function of workspace, list, key, secret): spares an HMAC per page. */
  private readonly made = new Map<string, string>();
  private readonly checked = new Map<string, string>();

  constructor(private readonly secret: Buffer) {}

  private mac(workspaceId: string, list: string, payload: string): Buffer {
    return createHmac('sha256', this.secret).update(`${workspaceId}\n${list}\n${payload}`).digest().subarray(0, 16);
  }

  /** Encodes `key` for `list` in `workspaceId` as `<base64url payload>.<base64url mac>`. */
  encode(workspaceId: string, list: string, key: string): string {
    const k = `${workspaceId}\n${list}\n${key}`;
    const hit = this.made.get(k);
    if (hit !== undefined) return hit;
    const payload = Buffer.from(key, 'utf8').toString('base64url');
    const cursor = `${payload}.${this.mac(workspaceId, list, payload).toString('base64url')}`;
    if (this.made.size >= CACHE_SIZE) this.made.clear();
    this.made.set(k, cursor);
    return cursor;
  }

  /** Decodes a cursor {@link encode} made for this workspace and list. @throws ApiError 400 `invalid_request` else. */
  decode(workspaceId: string, list: string, cursor: string): string {
    // Keyed by workspace and list too: the same text checked for another list is checked again.
    const k = `${workspaceId}\n${list}\n${cursor}`;
    const hit = this.checked.get(k);
    if (hit !== undefined) return hit;
    const key = this.verify(workspaceId, list, cursor);
    if (this.checked.size >= CACHE_SIZE) this.checked.clear();
    this.checked.set(k, key);
    return key;
  }

  private verify(workspaceId: string, list: string, cursor: string): string {
    const dot = cursor.indexOf('.');
    if (dot <= 0 || cursor.length > 2048) throw invalid('cursor is invalid', 'query');
    const payload = cursor.slice(0, dot);
    const given = Buffer.from(cursor.slice(dot + 1), 'base64url');
    const want = this.mac(workspaceId, list, payload);
    if (given.length !== want.length || !timingSafeEqual(given, want)) throw invalid('cursor is invalid', 'query');
    return Buffer.from(payload, 'base64url').toString('utf8');
  }
}
