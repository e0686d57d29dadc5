/**
 * Source credentials at rest (docs/storage.md#secrets-at-rest): AES-256-GCM with a random 96-bit nonce, associated data
 * binding a ciphertext to its workspace and source, and a key id for rotation: `DATA_DIR/master.keys` (mode
 * 0600) holds every key by id and names the active one.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { join } from 'node:path';

/** A sealed secret as stored in a record. */
export interface Sealed { kid: string; iv: string; ct: string; tag: string }

interface KeyFile { active: string; keys: Record<string, string> }

export class SecretError extends Error {}

export class SecretBox {
  constructor(private keys: Map<string, Buffer>, public activeKid: string) {}

  /** Re-reads `dir/master.keys` into this box (after a rotation), so every holder sees the new key. */
  reload(dir: string): void {
    const fresh = SecretBox.load(dir);
    this.keys = fresh.keys;
    this.activeKid = fresh.activeKid;
  }

  /** Loads `dir/master.keys`, creating it with one new key when missing. */
  static load(dir: string): SecretBox {
    const path = join(dir, 'master.keys');
    let file: KeyFile;
    try {
      file = JSON.parse(fs.readFileSync(path, 'utf8')) as KeyFile;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new SecretError(
        `${path} is unreadable: ${(e as Error).message}`);
      file = { active: 'k1', keys: { k1: randomBytes(32).toString('hex') } };
      writeKeyFile(path, file);
    }
    const keys = new Map(Object.entries(file.keys).map(([kid, hex]) => [kid, Buffer.from(hex, 'hex')] as const));
    if (!keys.has(file.active) || [...keys.values()].some((k) => k.length !== 32)) throw new SecretError(
      `${path} is malformed`);
    return new SecretBox(keys, file.active);
  }

  /** Adds a new key, makes it active and saves the key file; returns the new key id. */
  static addKey(dir: string): string {
    const path = join(dir, 'master.keys');
    const file = JSON.parse(fs.readFileSync(path, 'utf8')) as KeyFile;
    let n = Object.keys(file.keys).length + 1;
    while (file.keys[`k${n}`]) n++;
    const kid = `k${n}`;
    file.keys[kid] = randomBytes(32).toString('hex');
    file.active = kid;
    writeKeyFile(path, file);
    return kid;
  }

  /** Encrypts `plaintext` under the active key, bound to `context` (e.g. `workspaceId/sourceId`). */
  seal(plaintext: string, context: string): Sealed {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.keys.get(this.activeKid)!, iv);
    c.setAAD(Buffer.from(`${this.activeKid}\n${context}`));
    const ct = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
    return { kid: this.activeKid, iv: iv.toString('base64'), ct: ct.toString('base64'),
      tag: c.getAuthTag().toString('base64') };
  }

  /** Decrypts a {@link Sealed} made for `context`. @throws SecretError: unknown key id, altered, or another context. */
  open(sealed: Sealed, context: string): string {
    const key = this.keys.get(sealed.kid);
    if (!key) throw new SecretError(`unknown key id ${sealed.kid}`);
    try {
      const d = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'));
      d.setAAD(Buffer.from(`${sealed.kid}\n${context}`));
      d.setAuthTag(Buffer.from(sealed.tag, 'base64'));
      return Buffer.concat([d.update(Buffer.from(sealed.ct, 'base64')), d.final()]).toString('utf8');
    } catch {
      throw new SecretError('the secret cannot be decrypted: it was altered or belongs to another source');
    }
  }
}

function writeKeyFile(path: string, file: KeyFile): void {
  const tmp = `${path}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(file, null, 2) + '\n', { mode: 0o600 });
  const fd = fs.openSync(tmp, 'r');
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  fs.renameSync(tmp, path);
}
