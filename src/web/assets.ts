/**
 * The settings area's two static files (docs/web.md#rendering), kept as string constants so the
 * TypeScript build carries them into dist/ with nothing to copy: one style sheet and the one
 * script (the copy button; every page works without it). Both are served from `/assets/`
 * by src/web/app.ts, which is what the pages' CSP (`default-src 'self'`) allows.
 */

/** `/assets/style.css`. */
export const STYLE_CSS = `:root {
  --fg: #1b1f24; --muted: #57606a; --bg: #f6f8fa; --card: #ffffff; --line: #d0d7de;
  --accent: #0a5bd3; --accent-fg: #ffffff; --danger: #b42318; --ok: #1a7f37; --warn-bg: #fff8e1; --warn-line: #d4a72c;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  color: var(--fg); background: var(--bg); line-height: 1.5;
}
* { box-sizing: border-box; }
body { margin: 0; }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, textarea:focus-visible, select:focus-visible {
  outline: 3px solid #80b3ff; outline-offset: 2px; }
.top { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem 1.5rem; padding: 0.75rem 1.5rem;
  background: #1b1f24; color: #ffffff; }
.top a { color: #ffffff; text-decoration: none; }
.top .brand { font-weight: 700; }
.top nav { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; flex: 1; }
.top nav a[aria-current="page"] { text-decoration: underline; text-underline-offset: 0.3em; }
.top .who { color: #d0d7de; font-size: 0.9rem; }
.top form { margin: 0; }
.top button { background: transparent; color: #ffffff; border: 1px solid #8c959f; }
main { max-width: 72rem; margin: 2rem auto; padding: 0 1.5rem; }
main.narrow { max-width: 26rem; }
h1 { font-size: 1.6rem; margin: 0 0 1rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 0.75rem; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 1.25rem 1.5rem; }
label { display: block; font-weight: 600; margin: 0.9rem 0 0.3rem; }
.hint { color: var(--muted); font-size: 0.875rem; font-weight: 400; }
input[type="text"], input[type="email"], input[type="password"], input[type="date"], input[type="number"],
textarea, select {
  width: 100%; padding: 0.5rem 0.6rem; font: inherit; border: 1px solid #8c959f; border-radius: 6px;
  background: #ffffff; color: var(--fg);
}
textarea { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.9rem;
  resize: vertical; }
input[type="number"] { max-width: 8rem; }
fieldset { border: 1px solid var(--line); border-radius: 6px; margin: 0.9rem 0 0; padding: 0.5rem 0.9rem 0.75rem; }
legend { font-weight: 600; padding: 0 0.3rem; }
.scopes { display: grid; grid-template-columns: repeat(auto-fill, minmax(13rem, 1fr)); gap: 0.2rem 1rem; }
.scopes label { font-weight: 400; margin: 0.2rem 0; display: flex; gap: 0.4rem; align-items: center; }
button, .button { display: inline-block; font: inherit; font-weight: 600; padding: 0.45rem 1rem; border-radius: 6px;
  cursor: pointer; border: 1px solid var(--accent); background: var(--accent); color: var(--accent-fg);
  text-decoration: none; }
button.secondary, .button.secondary { background: #ffffff; color: var(--fg); border-color: #8c959f; }
button.danger, .button.danger { background: var(--danger); border-color: var(--danger); color: #ffffff; }
.actions { display: flex; flex-wrap: wrap; gap: 0.75rem; align-items: center; margin-top: 1.25rem; }
.actions form { margin: 0; }
table { width: 100%; border-collapse: collapse; background: var(--card); border: 1px solid var(
  --line); border-radius: 8px; font-size: 0.92rem; }
th, td { text-align: left; padding: 0.55rem 0.75rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #eaeef2; font-weight: 600; }
tr:last-child td { border-bottom: 0; }
tr.revoked td { color: var(--muted); }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.9em; }
.scope-list { display: flex; flex-wrap: wrap; gap: 0.25rem; }
.tag { display: inline-block; padding: 0 0.45rem; border-radius: 999px; background: #eaeef2; border: 1px solid var(
  --line); font-size: 0.8rem; }
.status-active { color: var(--ok); font-weight: 600; }
.status-revoked, .status-expired { color: var(--danger); font-weight: 600; }
.message { border-radius: 6px; padding: 0.75rem 1rem; margin: 0 0 1rem; border: 1px solid; }
.message.error { background: #fdecea; border-color: var(--danger); color: #7a1a12; }
.message.ok { background: #e6f4ea; border-color: var(--ok); color: #0f4d22; }
.message.warn { background: var(--warn-bg); border-color: var(--warn-line); color: #5c4400; }
.secret { display: flex; gap: 0.5rem; align-items: stretch; margin: 0.75rem 0; }
.secret input { flex: 1; font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas,
  monospace; font-size: 0.95rem; padding: 0.55rem 0.6rem;
  border: 1px solid #8c959f; border-radius: 6px; background: #f6f8fa; color: var(--fg); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.3rem 1rem; margin: 0; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
.empty { color: var(--muted); padding: 1rem; background: var(--card); border: 1px dashed var(
  --line); border-radius: 8px; }
[hidden] { display: none !important; }
.publish { display: flex; flex-wrap: wrap; gap: 0.3rem; align-items: center; margin: 0; }
.publish label { margin: 0; }
.publish input[type="text"] { width: 11rem; padding: 0.3rem 0.4rem; }
td form { margin: 0; }
.endpoint { margin: 0 0 1rem; }
.endpoint h3 { margin: 0 0 0.6rem; font-size: 1rem; overflow-wrap: anywhere; }
.endpoint .actions form { margin: 0; }
table.deliveries { margin-top: 0.8rem; }
table.deliveries caption { text-align: left; padding: 0.3rem 0; }
.wrap { overflow-wrap: anywhere; }
td { overflow-wrap: break-word; }
td code, td a { overflow-wrap: normal; }
form.card { max-width: 52rem; }
h2 + table, h2 + .hint + table { margin-top: 0.5rem; }
ul.links { padding-left: 1.2rem; }
ul.links li { margin: 0.4rem 0; }
@media (max-width: 40rem) {
  .top { padding: 0.6rem 1rem; gap: 0.4rem 1rem; }
  .top form { order: 1; margin-left: auto; }
  .top nav { order: 2; flex-basis: 100%; gap: 0.25rem 1.1rem; }
  .top .who { order: 3; flex-basis: 100%; font-size: 0.8rem; overflow-wrap: anywhere; }
  .top button { padding: 0.3rem 0.75rem; }
  td, td code, td a { overflow-wrap: anywhere; }
  main { margin: 1rem auto; padding: 0 0.75rem; }
  .card { padding: 1rem; }
  dl.facts { grid-template-columns: 1fr; gap: 0 0; }
  dl.facts dd { margin-bottom: 0.4rem; }
  .secret { flex-wrap: wrap; }
  .secret input { min-width: 0; }
  table.stack, table.stack tbody, table.stack tr, table.stack td { display: block; width: 100%; }
  table.stack thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  table.stack tr { border-bottom: 1px solid var(--line); padding: 0.4rem 0; }
  table.stack tr:last-child { border-bottom: 0; }
  table.stack td { border: 0; padding: 0.2rem 0.75rem; display: grid; grid-template-columns: 7.5rem minmax(0, 1fr);
    gap: 0.5rem; }
  table.stack td::before { content: attr(data-label); font-weight: 600; color: var(--muted); }
  table.stack td:empty { display: none; }
  .publish input[type="text"] { width: 100%; }
}
.skip { position: absolute; left: -999px; top: 0; background: #ffffff; color: var(
  --accent); padding: 0.5rem 1rem; z-index: 10; }
.skip:focus { left: 0.5rem; top: 0.5rem; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(
  0 0 0 0); white-space: nowrap; }
.docs-top { flex-wrap: wrap; }
.docs-search { display: flex; gap: 0.5rem; flex: 1; max-width: 32rem; margin-left: auto; }
.docs-search input { flex: 1; min-width: 0; padding: 0.4rem 0.6rem; font: inherit; border: 1px solid #8c959f;
  border-radius: 6px; }
.docs-search button { background: #ffffff; color: #1b1f24; border-color: #ffffff; }
.docs { display: grid; grid-template-columns: 17rem minmax(0, 1fr); max-width: 90rem; margin: 0 auto; }
.docs-single { grid-template-columns: minmax(0, 1fr); max-width: 60rem; }
.docs-single main { padding: 0 1.5rem; }
.docs main { max-width: none; margin: 1.5rem 0; min-width: 0; }
.docs main:focus { outline: none; }
.toc { position: sticky; top: 0; align-self: start; max-height: 100vh; overflow-y: auto; padding: 1.5rem 1rem;
  border-right: 1px solid var(--line); font-size: 0.875rem; }
.toc-title { font-weight: 700; margin: 0 0 0.5rem; }
.toc ul { list-style: none; margin: 0; padding: 0; }
.toc ul ul { padding-left: 0.5rem; margin-bottom: 0.5rem; }
.toc li { margin: 0.15rem 0; }
.toc a { text-decoration: none; overflow-wrap: anywhere; }
.toc a:hover { text-decoration: underline; }
.group h3 { margin-top: 2rem; padding-bottom: 0.3rem; border-bottom: 1px solid var(--line); }
.op { background: var(--card); border: 1px solid var(
  --line); border-radius: 8px; padding: 0.9rem 1.2rem; margin: 0.9rem 0; scroll-margin-top: 1rem; }
.op h3, .op h4 { margin: 0 0 0.4rem; font-size: 1.05rem; display: flex; flex-wrap: wrap; gap: 0.5rem;
  align-items: center; }
.op .path { font-size: 1rem; overflow-wrap: anywhere; }
.op .anchor { color: var(--muted); text-decoration: none; font-weight: 400; }
.op-title { margin: 0 0 0.5rem; font-weight: 600; }
.doc-text { white-space: pre-wrap; overflow-wrap: anywhere; font-size: 0.92rem; margin: 0; }
.method { display: inline-block; min-width: 4.2rem; text-align: center; padding: 0.05rem 0.4rem; border-radius: 4px;
  font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  font-size: 0.75rem; font-weight: 700; color: #ffffff; background: #57606a; }
.toc .method { min-width: 3.6rem; font-size: 0.68rem; }
.m-get { background: #0a5bd3; } .m-post { background: #1a7f37; } .m-put,
  .m-patch { background: #8a4b00; } .m-delete { background: #b42318; }
.results li { margin: 0 0 1rem; }
.results p { margin: 0.2rem 0 0; color: var(--muted); overflow-wrap: anywhere; }
@media (max-width: 50rem) {
  .docs { grid-template-columns: 1fr; }
  .toc { position: static; max-height: 20rem; border-right: 0; border-bottom: 1px solid var(--line); }
  .docs main { padding: 0 1rem; }
  .docs-search { max-width: none; width: 100%; }
}

/* ---- Public docs: page parts (docs/web.md#operations) ---- */
.docs-body { overflow-x: hidden; }
.docs main { padding: 0 2rem; }
.docs .md { font-size: 0.95rem; overflow-wrap: anywhere; }
.docs .md p { margin: 0.4rem 0; }
.docs .md ul, .docs .md ol { padding-left: 1.4rem; }
.docs .md blockquote {
  margin: 0.5rem 0; padding: 0.1rem 0.9rem; border-left: 3px solid var(--line); color: var(--muted);
}
.docs .md code, .prop-desc code { background: #eef1f4; padding: 0.05rem 0.3rem; border-radius: 4px; }
pre.code, pre.md-code {
  background: #1b1f24; color: #e6edf3; padding: 0.75rem 1rem; border-radius: 6px; overflow-x: auto;
  max-width: 100%; font-size: 0.85rem; line-height: 1.45; margin: 0.4rem 0; }
pre.code code, pre.md-code code { background: none; padding: 0; color: inherit; white-space: pre; }
.table-wrap { max-width: 100%; overflow-x: auto; margin: 0.4rem 0; }
table.params td p, table.md-table p { margin: 0; }
.op > h3 { display: block; overflow-wrap: anywhere; }
.op :not(pre) > code, .schema-type { overflow-wrap: anywhere; }
.op table.params code { overflow-wrap: break-word; }
table.params code.type, .prop-type, code.type { color: #6f42c1; }
.req { color: var(--danger); font-size: 0.78rem; font-weight: 600; }
.op h5 {
  font-size: 0.85rem; text-transform: uppercase; letter-spacing: 0.04em; color: var(--muted); margin: 1rem 0 0.4rem;
}
.payload { border-top: 1px solid var(--line); padding: 0.3rem 0; }
.payload h5 { text-transform: none; letter-spacing: 0; color: var(--fg); display: block; overflow-wrap: anywhere;
  margin: 0.5rem 0 0.2rem; font-size: 0.92rem; }
.code-label { font-weight: 700; }
code.media { color: var(--muted); }
.payload h5 code, .prop code, .op-facts code { overflow-wrap: anywhere; }
ul.schema { list-style: none; margin: 0.2rem 0; padding-left: 0; font-size: 0.9rem; }
ul.schema ul.schema { padding-left: 1rem; border-left: 1px dashed var(--line); margin-left: 0.3rem; }
ul.schema li { padding: 0.25rem 0; }
.prop { display: flex; flex-wrap: wrap; gap: 0.2rem 0.5rem; align-items: baseline; }
.prop-name { font-weight: 600; }
.prop-type {
  font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.82rem;
  overflow-wrap: anywhere;
}
.prop-desc { color: #3d444d; overflow-wrap: anywhere; }
.prop-desc p { margin: 0.1rem 0; }
details.example summary { cursor: pointer; color: var(--accent); font-size: 0.88rem; margin: 0.3rem 0; }
.sample { margin-top: 1rem; }
.sample-head { display: flex; justify-content: space-between; align-items: center; }
.sample-head button { padding: 0.2rem 0.7rem; font-size: 0.82rem; }
.op-facts { margin: 0.5rem 0; font-size: 0.88rem; }
.op-facts dd { overflow-wrap: anywhere; }
.docs-list { list-style: none; padding: 0; display: grid; gap: 1rem; }
.docs-list h2 { margin: 0 0 0.4rem; font-size: 1.15rem; overflow-wrap: anywhere; }
.docs-list p { margin: 0.2rem 0; overflow-wrap: anywhere; }
@media (min-width: 64rem) {
  .docs { grid-template-columns: 18rem minmax(0, 1fr); }
  .toc { position: sticky; top: 0; max-height: 100vh; }
}
@media (max-width: 50rem) {
  .docs main { padding: 0 0.9rem; }
  .op { padding: 0.75rem 0.8rem; }
  .top.docs-top { padding: 0.6rem 0.9rem; gap: 0.6rem; }
  table.stack, table.stack tbody, table.stack tr, table.stack td { display: block; width: 100%; }
  table.stack thead { display: none; }
  table.stack tr { border-bottom: 1px solid var(--line); padding: 0.4rem 0; }
  table.stack td { border: 0; padding: 0.15rem 0.6rem; }
  table.stack td::before { content: attr(data-label) ": "; font-weight: 600; color: var(--muted); }
  table.stack td > p { display: inline; }
  table.stack td:empty, table.stack td[data-label="Description"]:empty { display: none; }
}
`;

/**
 * \`/assets/copy.js\`: a button \`data-copy="ID"\` copies the value of the element with that id to
 * the clipboard. The buttons are rendered \`hidden\`; this script shows them, so a browser
 * without JavaScript shows no button that does nothing.
 */
export const COPY_JS = `"use strict";
document.querySelectorAll("button[data-copy]").forEach(function (button) {
  var target = document.getElementById(button.getAttribute("data-copy"));
  if (!target) return;
  button.hidden = false;
  var said = function (text) { button.textContent = text; setTimeout(function () { button.textContent = "Copy"; },
    2000); };
  button.addEventListener("click", function () {
    var text = "value" in target ? target.value : target.textContent;
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { said("Copied"); },
        function () { said("Copy failed: select the key and copy it"); });
    } else {
      // Plain http (not localhost): the Clipboard API is not offered; select the text and copy the old way.
      if (target.select) target.select();
      else { var range = document.createRange(); range.selectNodeContents(target);
        var sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range); }
      said(document.execCommand && document.execCommand("copy") ? "Copied" : "Press Ctrl+C to copy");
    }
  });
});
`;
