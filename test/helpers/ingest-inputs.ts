/**
 * Inputs for ingestion stress tests and bench/reliability.ts (row `ingest`): pathological
 * pastes that once stalled the server, and realistic ~1.8 MB documents of each common kind.
 */

/** `# h` lines: one Markdown section each (400,000 → 1.6 MB). */
export const headings = (n: number): string => '# h\n'.repeat(n);

/** An OpenAPI 3.0 JSON document with `n` paths of one GET operation each (20,000 → 1.1 MB without description). */
export function openApiPaths(n: number, description?: string): string {
  const paths: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) paths[`/i${i}`] = { get: description === undefined ? { responses: { 200: { description: 'OK' } } } : { summary: `Get item ${i}`, description, responses: { 200: { description: 'OK' } } } };
  return JSON.stringify({ openapi: '3.0.3', info: { title: 'Stress API', version: '1' }, paths });
}

/** An HTML page of `n` `<h2>` sections (190,000 → ~2 MB). */
export const h2Page = (n: number, body = ''): string => `<!doctype html><html><head><title>Stress</title></head><body>${`<h2>t</h2>${body}`.repeat(n)}</body></html>`;

/** A WSDL 1.1 document whose one portType has `n` operations (90,000 → 1.9 MB). */
export function wsdlOperations(n: number): string {
  return `<?xml version="1.0"?><definitions xmlns="http://schemas.xmlsoap.org/wsdl/" name="Stress"><portType name="P">${'<operation name="o"/>'.repeat(n)}</portType></definitions>`;
}

const PARA = 'The payments API lets you create charges, refunds and payouts. Every request is authenticated with a bearer token, and errors come back as JSON with a code and a message.';

/** ~`bytes` of Markdown with a heading every ~`every` characters. */
export function markdownDoc(bytes: number, every = 400): string {
  const parts: string[] = [];
  let len = 0;
  for (let i = 0; len < bytes; i++) {
    const s = `## Section ${i}\n\n${PARA.repeat(Math.max(1, Math.round(every / PARA.length)))}\n\n`;
    parts.push(s);
    len += s.length;
  }
  return parts.join('');
}

/** ~`bytes` of OpenAPI JSON (operations with a paragraph of description each). */
export const openApiDoc = (bytes: number): string => openApiPaths(Math.ceil(bytes / (PARA.length + 120)), PARA);

/** ~`bytes` of HTML with an `<h2>` section every ~600 characters. */
export const htmlDoc = (bytes: number): string => h2Page(Math.ceil(bytes / (PARA.length * 3 + 20)), `<p>${PARA}</p><p>${PARA}</p><p>${PARA}</p>`);
