/**
 * The inbox's and agents page's styles (appended to `/assets/style.css`) and `/assets/inbox.js`, the inbox's page
 * script (docs/web.md#inbox): it follows `/settings/inbox/stream` and, on an event, fetches the page again and swaps
 * in its `data-live-part` pieces, so an open page stays current; without it the page works by reload.
 */

/** Styles of the inbox (list and open conversation) and the agents page. */
export const INBOX_CSS = `
.inbox.open { display: grid; grid-template-columns: minmax(16rem, 22rem) minmax(0, 1fr); gap: 1.5rem;
  align-items: start; }
.inbox-side h1 { font-size: 1.3rem; }
.inbox .back { display: none; margin: 0 0 0.5rem; }
.filters { display: flex; flex-wrap: wrap; gap: 0.5rem 0.9rem; align-items: end; margin: 0 0 1rem; }
.filters label { margin: 0; font-weight: 600; font-size: 0.9rem; }
.filters select { width: auto; min-width: 7rem; display: block; margin-top: 0.2rem; }
.filters label.check { display: flex; gap: 0.35rem; align-items: center; padding-bottom: 0.45rem; }
ul.inbox-list { list-style: none; margin: 0; padding: 0; background: var(--card); border: 1px solid var(--line);
  border-radius: 8px; }
ul.inbox-list li { border-bottom: 1px solid var(--line); }
ul.inbox-list li:last-child { border-bottom: 0; }
ul.inbox-list a { display: block; padding: 0.65rem 0.9rem; color: var(--fg); text-decoration: none; }
ul.inbox-list a:hover { background: #f3f6f9; }
ul.inbox-list li.current a { background: #e8f0fe; }
.conv-top { display: flex; justify-content: space-between; gap: 0.5rem; align-items: baseline; }
.conv-top time { color: var(--muted); font-size: 0.8rem; white-space: nowrap; }
.conv-subject, .conv-who, .conv-preview { overflow-wrap: anywhere; }
.conv-who { display: block; font-size: 0.88rem; color: var(--muted); }
.conv-preview { display: block; font-size: 0.9rem; margin: 0.15rem 0 0.3rem; color: #3d444d; }
.tag.person { background: #fff1c2; border-color: var(--warn-line); }
.tag.status-open { background: #ddf4e4; } .tag.status-waiting { background: #e8f0fe; }
.conversation h1 { overflow-wrap: anywhere; }
ol.thread { list-style: none; margin: 1rem 0; padding: 0; display: flex; flex-direction: column; gap: 0.6rem; }
ol.thread .msg { max-width: 85%; background: var(--card); border: 1px solid var(--line); border-radius: 10px;
  padding: 0.5rem 0.8rem; align-self: flex-start; }
ol.thread .msg.from-user, ol.thread .msg.from-api, ol.thread .msg.from-bot { align-self: flex-end;
  background: #e8f0fe; border-color: #b6cdf5; }
.msg-who { font-weight: 600; font-size: 0.88rem; }
ol.thread time { color: var(--muted); font-size: 0.8rem; }
.msg-body { margin: 0.2rem 0 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.answer { margin: 0 0 0.75rem; }
.answer .hint { margin: 0; }
.answer form { margin: 0.5rem 0 0; }
ul.citations { margin: 0.4rem 0 0; padding-left: 1.2rem; font-size: 0.9rem; overflow-wrap: anywhere; }
.status-form { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; margin: 1rem 0 0; }
.status-form label { margin: 0; }
.status-form select { width: auto; }
.reply textarea { font-family: inherit; font-size: 1rem; }
.agent { margin-top: 1.25rem; }
.agent h2 { margin-top: 0; overflow-wrap: anywhere; }
.snippet textarea { font-size: 0.82rem; }
@media (max-width: 50rem) {
  .inbox.open { display: block; }
  .inbox.open .inbox-side { display: none; }
  .inbox .back { display: block; }
  ol.thread .msg { max-width: 100%; }
}
`;

/** `/assets/inbox.js`. */
export const INBOX_JS = `"use strict";
(function () {
  var root = document.querySelector("[data-live]");
  if (!root || !window.EventSource || !window.fetch || !window.DOMParser) return;
  var busy = false, again = false, timer = null;
  // A part marked data-live-append gets the new children (by id) appended, so a screen reader hears only them.
  function merge(part, fresh) {
    if (part.hasAttribute("data-live-append")) {
      for (var n = fresh.firstElementChild; n; n = n.nextElementSibling) {
        if (n.id && !document.getElementById(n.id)) part.appendChild(document.importNode(n, true));
      }
      var next = part.nextElementSibling;
      if (next && next.classList.contains("empty") && part.children.length) next.remove();
    } else if (part.innerHTML !== fresh.innerHTML) {
      part.replaceChildren.apply(part, Array.prototype.map.call(fresh.childNodes, function (c) {
        return document.importNode(c, true); }));
    }
  }
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) { return r.ok && !r.redirected ? r.text() : null; })
      .then(function (text) {
        if (text === null) return;
        var doc = new DOMParser().parseFromString(text, "text/html");
        document.querySelectorAll("[data-live-part]").forEach(function (part) {
          var name = part.getAttribute("data-live-part");
          var fresh = doc.querySelector('[data-live-part="' + name + '"]');
          if (fresh) merge(part, fresh);
        });
      })
      .catch(function () { /* the next event or a reload tries again */ })
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  function soon() { if (timer === null) timer = setTimeout(function () { timer = null; refresh(); }, 50); }
  var stream = new EventSource(root.getAttribute("data-live"));
  var opened = false;
  stream.addEventListener("open", function () { if (opened) soon(); opened = true; });
  ["conversation.created", "conversation.updated", "message.created", "answer.created"].forEach(function (t) {
    stream.addEventListener(t, soon);
  });
  root.setAttribute("data-live-ready", "");
})();
`;
