/**
 * Website crawl for `website` sources (docs/sources.md#website-crawl: "a website crawl follows same-origin links";
 * `SOURCE_CRAWL_MAX_PAGES` in docs/configuration.md#settings). Every page goes through {@link fetchDocument}, so the
 * SSRF rules, time and size limits apply to each page and each redirect.
 */
import { FetchError, fetchDocument, type FetchOptions } from './fetch.js';
import { IngestError } from '../types.js';
import type { LinksJob, PageLink } from '../analyze.js';

/** Options of {@link crawlWebsite}: the fetch options plus the crawl bounds. */
export type CrawlOptions = FetchOptions & {
  /** Most fetches made (every fetched URL counts, HTML or not, failed or not); at least 1. */
  maxPages: number;
  /** Most link hops from the start page (the start page is depth 0); default 3. */
  maxDepth?: number;
  /** The same-origin links of a page: an ingestion worker's job (`Analyzer.links`). */
  links: (job: LinksJob) => Promise<PageLink[]>;
};

/** One crawled HTML page as fetched (final URL without fragment, raw body, Content-Type header for its charset). */
export interface CrawledPage { url: string; body: Buffer; contentType?: string }

/**
 * Pages in breadth-first order, the start page first; `skipped`: URLs not kept (failed fetches, non-HTML responses,
 * non-HTML file links, redirects off the origin).
 */
export interface CrawlResult { pages: CrawledPage[]; skipped: string[] }

const DEFAULT_MAX_DEPTH = 3;

function withoutFragment(u: URL): string {
  const c = new URL(u.href);
  c.hash = '';
  return c.href;
}

function isHtml(contentType: string, body: Buffer): boolean {
  if (contentType === 'text/html' || contentType === 'application/xhtml+xml') return true;
  if (contentType !== '') return false;
  const head = body.subarray(0, 512).toString('latin1').trimStart().toLowerCase();
  return head.startsWith('<!doctype html') || head.startsWith('<html');
}

/**
 * Crawls a website breadth-first from `startUrl` (docs/sources.md#website-crawl) and returns its HTML pages as
 * documents, with what it skipped (`skipped`). Same origin only, at most `maxPages` fetches and `maxDepth` (default 3)
 * hops; the main thread only fetches: link extraction and parsing run on an ingestion worker (`opts.links`).
 * @throws FetchError when the start page cannot be fetched; IngestError when it is not HTML or `startUrl` is invalid.
 */
export async function crawlWebsite(startUrl: string, opts: CrawlOptions): Promise<CrawlResult> {
  const maxDepth = Math.max(0, opts.maxDepth ?? DEFAULT_MAX_DEPTH);
  const maxPages = Math.max(1, Math.floor(opts.maxPages));
  let start: URL;
  try {
    start = new URL(startUrl);
  } catch {
    throw new FetchError('invalid_url', `URL ${JSON.stringify(startUrl.slice(0, 200))} is not a valid URL`);
  }
  const pages: CrawledPage[] = [];
  const skipped: string[] = [];
  const seen = new Set<string>([withoutFragment(start)]);
  const queue: Array<{ url: string; depth: number }> = [{ url: withoutFragment(start), depth: 0 }];
  let origin = start.origin;
  let fetches = 0;

  for (let i = 0; i < queue.length && fetches < maxPages; i++) {
    const { url, depth } = queue[i];
    const isStart = i === 0;
    fetches++;
    let doc;
    try {
      doc = await fetchDocument(url, opts);
    } catch (e) {
      if (isStart || !(e instanceof FetchError)) throw e;
      skipped.push(url);
      continue;
    }
    const finalUrl = withoutFragment(new URL(doc.url));
    if (isStart) {
      origin = new URL(finalUrl).origin;
    } else if (new URL(finalUrl).origin !== origin) {
      skipped.push(url);
      continue;
    }
    if (finalUrl !== url) {
      if (seen.has(finalUrl) && !isStart) continue; // another link already led to this page
      seen.add(finalUrl);
    }
    if (!isHtml(doc.contentType, doc.body)) {
      if (isStart) throw new IngestError(
        `the start page ${finalUrl} is not an HTML page (${doc.contentType || 'no content type'})`);
      skipped.push(url);
      continue;
    }
    const contentType = doc.headers['content-type'];
    pages.push({ url: finalUrl, body: doc.body, ...(contentType !== undefined ? { contentType } : {}) });
    if (depth >= maxDepth) continue;
    for (const link of await opts.links({ body: doc.body, contentType, baseUrl: finalUrl, origin })) {
      if (seen.has(link.url)) continue;
      seen.add(link.url);
      if (link.nonHtml) {
        skipped.push(link.url);
        continue;
      }
      queue.push({ url: link.url, depth: depth + 1 });
    }
  }
  return { pages, skipped };
}
