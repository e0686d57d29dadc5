/**
 * Reading yaml-test-suite cases (https://github.com/yaml/yaml-test-suite, data branch): one
 * folder per case (`ID/`, or `ID/NN/` for a case's variants) with `in.yaml`, `in.json` (the
 * expected value of each document, one JSON text after another) unless the value has no JSON
 * form, `error` when the input must be rejected, and `===` holding the title.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';

/** One case of the suite. */
export interface SuiteCase {
  /** `ID` or `ID/NN`. */
  id: string;
  title: string;
  input: string;
  /** The input must be rejected. */
  error: boolean;
  /** Text of `in.json`, or null when the case has none. */
  json: string | null;
}

/** Every case under `root` (a folder URL ending in `/`), sorted by id. */
export function suiteCases(root: URL): SuiteCase[] {
  const ids: string[] = [];
  for (const d of readdirSync(root, { withFileTypes: true })) {
    if (!d.isDirectory()) continue;
    if (existsSync(new URL(`${d.name}/in.yaml`, root))) ids.push(d.name);
    else for (const sub of readdirSync(new URL(`${d.name}/`, root))) ids.push(`${d.name}/${sub}`);
  }
  return ids.sort().map((id) => {
    const dir = new URL(`${id}/`, root);
    const read = (name: string): string | null => (existsSync(new URL(name, dir)) ? readFileSync(new URL(name, dir), 'utf8') : null);
    return {
      id,
      title: (read('===') ?? '').trim(),
      input: read('in.yaml') ?? '',
      error: existsSync(new URL('error', dir)),
      json: read('in.json'),
    };
  });
}

/**
 * Splits concatenated JSON texts (an `in.json`, one text per YAML document) and parses each;
 * an empty text gives `[]`.
 */
export function parseJsonStream(text: string): unknown[] {
  const values: unknown[] = [];
  let i = 0;
  for (;;) {
    while (i < text.length && /\s/.test(text[i])) i++;
    if (i >= text.length) return values;
    let j = i;
    if (text[i] === '{' || text[i] === '[') {
      let depth = 0;
      let inString = false;
      for (; j < text.length; j++) {
        const c = text[j];
        if (inString) {
          if (c === '\\') j++;
          else if (c === '"') inString = false;
        } else if (c === '"') inString = true;
        else if (c === '{' || c === '[') depth++;
        else if ((c === '}' || c === ']') && --depth === 0) break;
      }
      j++;
    } else if (text[i] === '"') {
      for (j++; j < text.length && text[j] !== '"'; j++) if (text[j] === '\\') j++;
      j++;
    } else {
      while (j < text.length && !/\s/.test(text[j])) j++;
    }
    values.push(JSON.parse(text.slice(i, j)));
    i = j;
  }
}
