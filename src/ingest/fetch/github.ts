/**
 * `github` sources (docs/sources.md#github: "from the repository's README and docs", `file` documents; `GITHUB_API_URL`
 * in docs/configuration.md#settings): the README and the Markdown files under `docs/`, read through the GitHub REST
 * API. Every request goes through {@link fetchDocument}; the API's own origin is trusted (it may be a local GitHub
 * Enterprise or a test fake), every other rule still applies.
 */
import { FetchError, fetchDocument, type FetchOptions } from './fetch.js';
import { IngestError, type ParsedDocument } from '../types.js';

/** Options of {@link fetchGithubDocs}. */
export type GithubOptions = FetchOptions & {
  /** Base URL of the GitHub REST API (`GITHUB_API_URL`), e.g. `https://ghe.example/api/v3`. */
  apiUrl: string;
  /** Most Markdown files read from `docs/` (default 50); the README is not counted. */
  maxFiles?: number;
};

/** What {@link fetchGithubDocs} returns. */
export interface GithubDocs {
  /** The repository's `full_name` (`owner/repo`). */
  title: string;
  /** The repository's description, when it has one. */
  description?: string;
  /** One `file` document per file: the README first, then `docs/` Markdown files by path. */
  documents: ParsedDocument[];
}

/** A parsed `https://github.com/{owner}/{repo}` URL; `ref` is the branch/tag/commit of a `/tree/{ref}/…` URL. */
export interface GithubRepoRef { owner: string; repo: string; ref?: string }

const DEFAULT_MAX_FILES = 50;
/** Directory listings fetched at most while looking for docs (bounds a deep `docs/` tree). */
const MAX_DIRECTORIES = 50;
const MARKDOWN = /\.(md|markdown|mdown|mkd|mdx)$/i;

/**
 * Parses a repository URL as docs/sources.md#github accepts it (`/tree/{ref}/…` keeps the ref).
 * @throws IngestError for anything else.
 */
export function parseGithubRepoUrl(repoUrl: string): GithubRepoRef {
  const fail = (): never => {
    throw new IngestError(
      `${JSON.stringify(repoUrl.slice(0, 200))} is not a GitHub repository URL (expected `
        + `https://github.com/{owner}/{repo})`);
  };
  let u: URL;
  try {
    u = new URL(repoUrl);
  } catch {
    return fail();
  }
  const host = u.hostname.toLowerCase();
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') ||
    (host !== 'github.com' && host !== 'www.github.com')) fail();
  const parts = u.pathname.split('/').filter((p) => p !== '');
  if (parts.length < 2) fail();
  const owner = parts[0];
  const repo = parts[1].replace(/\.git$/i, '');
  if (!/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/.test(owner) || !/^[A-Za-z0-9._-]{1,100}$/.test(repo) || repo === '.' ||
    repo === '..') fail();
  if (parts.length === 2) return { owner, repo };
  if (parts[2] === 'tree' && parts.length >= 4) return { owner, repo, ref: decodeURIComponent(parts[3]) };
  return fail();
}

interface ContentEntry { type: string; name: string; path: string }

function decodeUtf8(b: Buffer): string {
  const s = new TextDecoder('utf-8').decode(b);
  return s.charCodeAt(0) === 0xfeff ? s.slice(1) : s;
}

/** The JSON of an API answer. @throws IngestError when it is not JSON. */
function apiJson(body: Buffer, url: string): unknown {
  try {
    return JSON.parse(decodeUtf8(body)) as unknown;
  } catch {
    throw new IngestError(`the GitHub API answered ${url} with invalid JSON`);
  }
}

/**
 * Reads a GitHub repository's README and the Markdown files under `docs/` through the REST API at `opts.apiUrl`
 * (docs/sources.md#github): one `file` document per non-blank file, at most `maxFiles` (default 50) from docs, in path
 * order. `opts.headers` go with every request; `opts.apiUrl`'s origin is trusted; limits apply per request.
 * @throws IngestError when `repoUrl` is not a GitHub repository URL or an API answer is not the expected JSON;
 *   FetchError from any request (a missing repository is `http_status` 404).
 */
export async function fetchGithubDocs(repoUrl: string, opts: GithubOptions): Promise<GithubDocs> {
  const ref = parseGithubRepoUrl(repoUrl);
  let apiOrigin: string;
  try {
    apiOrigin = new URL(opts.apiUrl).origin;
  } catch {
    throw new IngestError(`GITHUB_API_URL ${JSON.stringify(opts.apiUrl)} is not a valid URL`);
  }
  const base = `${opts.apiUrl.replace(/\/+$/, '')}/repos/`
    + `${encodeURIComponent(ref.owner)}/${encodeURIComponent(ref.repo)}`;
  const query = ref.ref !== undefined ? `?ref=${encodeURIComponent(ref.ref)}` : '';
  const fetchOpts = (accept: string): FetchOptions => ({
    ...opts,
    headers: { 'x-github-api-version': '2022-11-28', ...opts.headers, accept },
    trustedOrigins: [...(opts.trustedOrigins ?? []), apiOrigin],
  });
  const getJson = async (url: string): Promise<unknown> =>
    apiJson((await fetchDocument(url, fetchOpts('application/vnd.github+json'))).body, url);
  /** A file's text (raw, or the JSON answer's base64 `content`) and its path when the API named it. */
  const getRaw = async (url: string): Promise<{ text: string; path?: string }> => {
    const doc = await fetchDocument(url, fetchOpts('application/vnd.github.raw'));
    if (doc.contentType === 'application/json' || doc.contentType.endsWith('+json')) {
      const v = apiJson(doc.body, url) as { content?: unknown; encoding?: unknown; path?: unknown } | null;
      if (v && typeof v.content === 'string' && v.encoding === 'base64') {
        return { text: decodeUtf8(Buffer.from(v.content, 'base64')),
          path: typeof v.path === 'string' ? v.path : undefined };
      }
      // A .json file served raw is still its own text.
    }
    return { text: decodeUtf8(doc.body) };
  };
  const ifFound = async <T>(p: Promise<T>): Promise<T | undefined> => {
    try {
      return await p;
    } catch (e) {
      if (e instanceof FetchError && e.code === 'http_status' && e.status === 404) return undefined;
      throw e;
    }
  };

  const info = await getJson(`${base}`);
  if (!info || typeof info !== 'object' || typeof (info as { full_name?: unknown }).full_name !== 'string') {
    throw new IngestError(`the GitHub API answer for ${ref.owner}/${ref.repo} has no full_name`);
  }
  const { full_name: title, description } = info as { full_name: string; description?: unknown };
  const documents: ParsedDocument[] = [];

  const readme = await ifFound(getRaw(`${base}/readme${query}`));
  if (readme && readme.text.trim() !== '') documents.push({ kind: 'file', title: readme.path ?? 'README.md',
    text: readme.text });

  // Breadth-first over docs/, collecting Markdown file paths.
  const maxFiles = Math.max(0, Math.floor(opts.maxFiles ?? DEFAULT_MAX_FILES));
  const files: string[] = [];
  const dirs = ['docs'];
  let listed = 0;
  while (dirs.length > 0 && listed < MAX_DIRECTORIES && files.length < maxFiles) {
    const dir = dirs.shift()!;
    listed++;
    const listing = await ifFound(getJson(`${base}/contents/${encodePath(dir)}${query}`));
    if (!Array.isArray(listing)) continue; // missing, or `docs` is a file
    const entries = (listing as ContentEntry[])
      .filter((e) => e && typeof e.path === 'string' && typeof e.type === 'string')
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    for (const e of entries) {
      if (e.type === 'dir') dirs.push(e.path);
      else if (e.type === 'file' && MARKDOWN.test(e.path) && files.length < maxFiles) files.push(e.path);
    }
  }
  files.sort();
  for (const path of files) {
    const file = await ifFound(getRaw(`${base}/contents/${encodePath(path)}${query}`));
    if (file && file.text.trim() !== '') documents.push({ kind: 'file', title: path, text: file.text });
  }

  const out: GithubDocs = { title, documents };
  if (typeof description === 'string' && description.trim() !== '') out.description = description;
  return out;
}

function encodePath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}
