/**
 * Opaque cursors for cursor pagination (docs/api.md#lists). A cursor is the last returned item's
 * sort key, bound by an HMAC to the workspace and the list, so a cursor from another
 * workspace or list — or an edited one — is a 400, never a page of someone else's order.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { invalid } from './errors.js';

export class CursorCodec {
  constructor(private readonly secret: Buffer) {}

  private mac(workspaceId: string, list: string, payload: string): Buffer {
    return createHmac('sha256', this.secret).update(`${workspaceId}\n${list}\n${payload}`).digest().subarray(0, 16);
  }

  /** Encodes `key` for `list` in `workspaceId` as `<base64url payload>.<base64url mac>`. */
  encode(workspaceId: string, list: string, key: string): string {
    const payload = Buffer.from(key, 'utf8').toString('base64url');
    return `${payload}.${this.mac(workspaceId, list, payload).toString('base64url')}`;
  }

  /**
   * Decodes a cursor made by {@link encode} for the same workspace and list.
   * @throws ApiError 400 `invalid_request` (`Query parameter cursor is invalid.`) for anything else.
   */
  decode(workspaceId: string, list: string, cursor: string): string {
    const dot = cursor.indexOf('.');
    if (dot <= 0 || cursor.length > 2048) throw invalid('cursor is invalid', 'query');
    const payload = cursor.slice(0, dot);
    const given = Buffer.from(cursor.slice(dot + 1), 'base64url');
    const want = this.mac(workspaceId, list, payload);
    if (given.length !== want.length || !timingSafeEqual(given, want)) throw invalid('cursor is invalid', 'query');
    return Buffer.from(payload, 'base64url').toString('utf8');
  }
}
