/**
 * The rules of the source request fields as the OpenAPI document states them (docs/api.md#create-source,
 * docs/api.md#update-source): what the create and update handlers enforce beyond the schema's types and lengths, said
 * once for generated clients.
 */
export const SOURCE_DOCS = {
  create: 'At least one of `url` and `content` (400 `url or content is required`). With both, the content is ingested '
    + 'and the url is kept as `inputUrl` (where the content came from; a rescan fetches it).',
  type: 'What to ingest the input as; `auto` detects it from the whole document. `url`, `website` and `github` need a '
    + '`url` and take no `content` (400).',
  url: 'An absolute `http` or `https` URL without user info (400 otherwise). It is normalized (lower-case host, '
    + 'default port '
    + 'dropped, fragment removed); a URL equal to the `inputUrl` of a source of the workspace → 409 `conflict`. '
    + 'Fetched under the server\'s fetching rules (private addresses refused, time and size limits).',
  content: 'The document itself, pasted (OpenAPI, JSON, GraphQL, Postman, AsyncAPI, proto, WSDL, Markdown or text).',
  updateUrl: 'A new absolute `http` or `https` URL, normalized as on creation and used by the next rescan. 409 '
    + '`conflict` when another '
    + 'source has it. On a source made from pasted content, the next rescan fetches the url (the pasted content is '
    + 'dropped). A new url clears the stored credential unless `auth` is set in the same request.',
  auth: 'A credential for the live checks (null removes it); the secret is encrypted at rest, never returned.',
  publicDocs: 'Public docs: given fields are merged into the current ones. `url` is not taken: it is derived as the '
    + 'server\'s '
    + 'public URL + `/docs/{slug}` (null without a slug).',
  slug: 'The path of the public docs, `/docs/{slug}`: 2–63 characters, lower-case letters, digits and `-`, not '
    + 'starting with `-`. '
    + 'Unique on the whole server: a slug another source has, in any workspace, → 409 `conflict`. null removes it.',
} as const;
