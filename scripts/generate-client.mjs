// Generates a typed TypeScript client from an OpenAPI 3.x document, without any dependency
// (docs/api.md#generating-a-client):
//   node scripts/generate-client.mjs SOURCE [-o FILE]
// SOURCE is a path to an openapi.json, or an http(s) URL such as
// http://127.0.0.1:3000/api/v1/openapi.json. The TypeScript goes to FILE, else to stdout.
// Exit status: 0 written; 1 the document could not be read or uses something the generator
// does not handle (the message names the JSON pointer); 2 bad usage.
import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { generateClient, GenerateError } from './client/generate.mjs';

const args = process.argv.slice(2);
const o = args.indexOf('-o');
const out = o >= 0 ? args[o + 1] : undefined;
const positional = o < 0 ? args : args.filter((_, i) => i !== o && i !== o + 1);
if (positional.length !== 1 || (o >= 0 && !out) || positional[0].startsWith('-')) {
  console.error('usage: node scripts/generate-client.mjs SOURCE [-o FILE]   (SOURCE: a path to an openapi.json or an http(s) URL)');
  process.exit(2);
}
const source = positional[0];

try {
  let text;
  if (/^https?:\/\//i.test(source)) {
    const res = await fetch(source);
    if (!res.ok) throw new Error(`GET ${source} answered ${res.status}`);
    text = await res.text();
  } else {
    text = readFileSync(source, 'utf8');
  }
  let doc;
  try { doc = JSON.parse(text); } catch (e) { throw new Error(`${source} is not JSON: ${e.message}`); }
  // The header names the file only, so that the output does not depend on where it was read from.
  const ts = generateClient(doc, basename(/^https?:/i.test(source) ? new URL(source).pathname : source));
  if (out) writeFileSync(out, ts); else process.stdout.write(ts);
} catch (e) {
  console.error(`generate-client: ${e instanceof GenerateError ? 'unsupported document: ' : ''}${e.message}`);
  process.exit(1);
}
