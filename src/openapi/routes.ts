/**
 * `GET /api/v1/openapi.json` (docs/api.md#openapi-document): the OpenAPI 3.1 document, without authentication. Built
 * and serialized on the first request, once the route table is complete, and kept as bytes.
 */
import { s } from '../http/schema.js';
import { type Route } from '../http/route.js';
import { route } from '../domain/route.js';
import { buildOpenApiDocument } from './document.js';

/** The parts of the document a client can rely on; the rest is OpenAPI 3.1 itself. */
const documentSchema = s.named('OpenApiDocument', s.object({
  openapi: s.enum(['3.1.0'] as const),
  info: s.object({ title: s.string(), version: s.enum(['2026-06-29'] as const) }, { additionalProperties: true }),
  paths: s.object({}, { additionalProperties: true }),
  components: s.object({}, { additionalProperties: true }),
}, { additionalProperties: true }));

/** `getRoutes` returns the whole route table; it is called once, on the first request. */
export function openapiRoutes(getRoutes: () => Route[]) {
  let cached: { status: number; body: object; json: Buffer } | undefined;
  return [
    route({
      method: 'GET', path: '/api/v1/openapi.json', operationId: 'getOpenApiDocument', tag: 'Meta', scope: null,
      summary: 'The OpenAPI 3.1 document of this API: every operation, parameter, body, response and required scope.',
      success: { status: 200, schema: documentSchema, description: 'The OpenAPI document.' },
      handler: () => {
        // Built once: every answer sends the same bytes (about 120 KB), with no serializing.
        if (!cached) {
          const json = Buffer.from(JSON.stringify(buildOpenApiDocument(getRoutes())));
          cached = Object.freeze({ status: 200, body: deepFreeze(JSON.parse(json.toString('utf8')) as object), json });
        }
        return cached;
      },
    }),
  ];
}

function deepFreeze<T>(o: T): T {
  if (typeof o === 'object' && o !== null) { for (const v of Object.values(o)) deepFreeze(v); Object.freeze(o); }
  return o;
}
