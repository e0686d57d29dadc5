/**
 * `GET /` when the settings area is on (docs/web.md#routes-and-forms): a small landing page with links to the
 * settings area, the published docs and the API reference (the OpenAPI document).
 */
import { html } from './html.js';
import { page } from './layout.js';
import { pageAnswer, type WebAnswer } from './context.js';

/** GET /: the landing page, the same for everyone (no session is read). */
export function getHome(): WebAnswer {
  return pageAnswer(200, page({ title: 'Welcome', narrow: true, content: html`<h1>Support Workspace</h1>
<div class="card">
<p>This server answers the Support Workspace API at <code>/api/v1</code>.</p>
<ul class="links">
<li><a href="/settings">Settings</a> <span class="hint">sign in to manage API keys, sources, webhooks and
  people</span></li>
<li><a href="/docs">Published docs</a> <span class="hint">the API documentation this server publishes</span></li>
<li><a href="/api/v1/openapi.json">API reference</a> <span class="hint">the OpenAPI 3.1 document</span></li>
</ul>
</div>` }));
}
