/**
 * The embeddable chat widget (`GET /widget.js`, docs/widget.md): plain browser JavaScript kept as a string
 * constant, like the settings area's assets. It draws a launcher and a chat panel in a shadow DOM, talks to the
 * widget API (`/widget/v1`, docs/api.md#widget-api) with a session token kept in localStorage per widget key, and
 * follows replies on `/widget/v1/stream?session=…`. No eval, no inline handlers, no style attributes: its styles
 * go through a constructed style sheet, so it runs under a host page's strict CSP.
 */
import { WIDGET_CSS } from './widgetStyle.js';

const SCRIPT = String.raw`(function () {
  "use strict";
  var me = document.currentScript;
  if (!me || !me.src || window.__supportWidget) return;
  var KEY = me.getAttribute("data-key") || "";
  if (KEY.indexOf("svcw_") !== 0) { console.warn("Support widget: data-key must be a widget key (svcw_...)"); return; }
  var API = new URL(me.src, location.href).origin;
  var STORE = "support-widget:" + KEY.slice(0, 24);
  var TITLE = me.getAttribute("data-title") || "Chat with us";
  var state = load();
  var shown = Object.create(null);
  var askedAt = null;
  var source = null, backoff = 1000, sending = false, unread = 0, opened = false, loadedOnce = false;

  function load() {
    try { return JSON.parse(localStorage.getItem(STORE) || "{}") || {}; } catch (e) { return {}; }
  }
  function save() { try { localStorage.setItem(STORE, JSON.stringify(state)); } catch (e) { /* private mode */ } }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // ---- the DOM, inside a shadow root ----
  var host = el("div", { "data-support-widget": "" });
  var root = host.attachShadow({ mode: "open" });
  var css = ${JSON.stringify(WIDGET_CSS)};
  if ("adoptedStyleSheets" in root && typeof CSSStyleSheet === "function" && "replaceSync" in CSSStyleSheet.prototype) {
    var sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
    root.adoptedStyleSheets = [sheet];
  } else {
    root.appendChild(el("style", null, css));
  }
  var launcher = el("button", { type: "button", class: "launcher", "aria-expanded": "false",
    "aria-controls": "sw-panel", "aria-label": "Open chat" });
  var NS = "http://www.w3.org/2000/svg";
  var icon = document.createElementNS(NS, "svg");
  icon.setAttribute("viewBox", "0 0 24 24"); icon.setAttribute("width", "28"); icon.setAttribute("height", "28");
  icon.setAttribute("aria-hidden", "true"); icon.setAttribute("focusable", "false");
  var bubble = document.createElementNS(NS, "path");
  bubble.setAttribute("fill", "currentColor");
  bubble.setAttribute("d", "M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2z");
  icon.appendChild(bubble);
  launcher.appendChild(icon);
  var badge = el("span", { class: "badge", hidden: "" });
  launcher.appendChild(badge);
  var panel = el("div", { id: "sw-panel", class: "panel", role: "dialog", "aria-labelledby": "sw-title", hidden: "" });
  var head = el("div", { class: "head" });
  head.appendChild(el("h2", { id: "sw-title" }, TITLE));
  var closer = el("button", { type: "button", class: "close", "aria-label": "Close chat" }, "\u00D7");
  head.appendChild(closer);
  var log = el("ol", { class: "log", role: "log", "aria-live": "polite", "aria-label": "Messages", tabindex: "0" });
  var empty = el("p", { class: "empty" }, "Ask us anything: we usually answer in a few minutes.");
  var status = el("p", { class: "status", role: "status", "aria-live": "polite" });
  var person = el("button", { type: "button", class: "person", hidden: "" }, "Talk to a person");
  var form = el("form", { class: "compose" });
  var label = el("label", { for: "sw-input", class: "sr" }, "Your message");
  var input = el("textarea", { id: "sw-input", rows: "2", maxlength: "4000", placeholder: "Write a message\u2026",
    required: "" });
  var send = el("button", { type: "submit", class: "send" }, "Send");
  form.appendChild(label); form.appendChild(input); form.appendChild(send);
  panel.appendChild(head); panel.appendChild(empty); panel.appendChild(log); panel.appendChild(status);
  panel.appendChild(person); panel.appendChild(form);
  root.appendChild(panel); root.appendChild(launcher);

  function attach() { (document.body || document.documentElement).appendChild(host); }
  if (document.body) attach(); else document.addEventListener("DOMContentLoaded", attach);

  // ---- opening and closing, keyboard ----
  function open() {
    opened = true;
    panel.hidden = false;
    launcher.setAttribute("aria-expanded", "true");
    launcher.setAttribute("aria-label", "Close chat");
    host.setAttribute("data-open", "");
    unread = 0; showBadge();
    input.focus();
    if (!loadedOnce) refresh();
    scrollDown();
  }
  function close(back) {
    opened = false;
    panel.hidden = true;
    launcher.setAttribute("aria-expanded", "false");
    launcher.setAttribute("aria-label", "Open chat");
    host.removeAttribute("data-open");
    if (back) launcher.focus();
  }
  launcher.addEventListener("click", function () { if (panel.hidden) open(); else close(true); });
  closer.addEventListener("click", function () { close(true); });
  panel.addEventListener("keydown", function (e) {
    if (e.key === "Escape") { e.preventDefault(); close(true); }
  });
  input.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); submit(); }
  });
  form.addEventListener("submit", function (e) { e.preventDefault(); submit(); });
  person.addEventListener("click", handoff);

  function showBadge() {
    badge.hidden = unread === 0;
    badge.textContent = unread > 9 ? "9+" : String(unread);
    launcher.setAttribute("aria-label", panel.hidden
      ? (unread ? "Open chat, " + unread + " new message" + (unread === 1 ? "" : "s") : "Open chat") : "Close chat");
  }
  function say(text, bad) { status.textContent = text || ""; status.className = bad ? "status bad" : "status"; }
  function scrollDown() { log.scrollTop = log.scrollHeight; }

  // ---- messages ----
  function mine(m) { return m.author ? m.author.type === "customer" : m.role === "user"; }
  function who(m) {
    if (mine(m)) return "You";
    var a = m.author;
    if (a && a.type === "bot") return a.name || "Assistant";
    return (a && a.name) || "Support";
  }
  function show(m, live) {
    if (!m || !m.id || shown[m.id] || (state.conversationId && m.conversationId !== state.conversationId)) return;
    shown[m.id] = true;
    empty.hidden = true;
    var li = el("li", { class: mine(m) ? "msg mine" : "msg theirs", "data-id": m.id });
    li.appendChild(el("span", { class: "who" }, who(m)));
    li.appendChild(linked(el("p", { class: "body" }), m.body));
    if (m.answerId && m.author && m.author.type === "bot") li.appendChild(rating(m.answerId));
    var t = new Date(m.createdAt);
    if (!isNaN(t.getTime())) li.appendChild(el("time", { datetime: m.createdAt },
      t.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })));
    var after = null;
    for (var n = log.lastChild; n; n = n.previousSibling) {
      if ((n.getAttribute("data-at") || "") <= m.createdAt) break;
      after = n;
    }
    li.setAttribute("data-at", m.createdAt);
    log.insertBefore(li, after);
    if (live && !mine(m) && panel.hidden) { unread++; showBadge(); }
    scrollDown();
  }

  // Addresses in a message (an answer's docs links) become links to the chat's server; nothing else is markup.
  // A /docs/ path only at the start of a word; closing punctuation after an address is not part of it.
  var ADDRESS = /(https?:\/\/\S+|(?<=^|\s)\/docs\/\S+)/g;
  function linked(p, text) {
    var at = 0, m;
    ADDRESS.lastIndex = 0;
    while ((m = ADDRESS.exec(text)) !== null) {
      var found = m[0].replace(/[).,;:!?'"\]]+$/, "");
      var url = null;
      try { url = new URL(found, API); } catch (e) { url = null; }
      if (!url || (url.protocol !== "https:" && url.protocol !== "http:")) continue;
      p.appendChild(document.createTextNode(text.slice(at, m.index)));
      p.appendChild(el("a", { href: url.href, target: "_blank", rel: "noopener noreferrer" }, found));
      at = m.index + found.length;
    }
    p.appendChild(document.createTextNode(text.slice(at)));
    return p;
  }
  // Helpful / Not helpful under an agent's answer; the say given is kept (the last 50) to show it pressed.
  function rating(answerId) {
    var box = el("div", { class: "rate", role: "group", "aria-label": "Was this answer helpful?" });
    var given = (state.rated || {})[answerId];
    var yes = el("button", { type: "button", "aria-pressed": String(given === true) }, "Helpful");
    var no = el("button", { type: "button", "aria-pressed": String(given === false) }, "Not helpful");
    function rate(helpful) {
      yes.disabled = no.disabled = true;
      call("POST", "/widget/v1/answers/" + encodeURIComponent(answerId) + "/feedback", { helpful: helpful })
        .then(function () {
          yes.setAttribute("aria-pressed", String(helpful)); no.setAttribute("aria-pressed", String(!helpful));
          var rated = state.rated || {};
          delete rated[answerId]; rated[answerId] = helpful;
          var ids = Object.keys(rated);
          for (var i = 0; i < ids.length - 50; i++) delete rated[ids[i]];
          state.rated = rated; save();
          say("Thanks for the feedback.");
        }, function (e) { say(e.message, true); })
        .then(function () { yes.disabled = no.disabled = false; });
    }
    yes.addEventListener("click", function () { rate(true); });
    no.addEventListener("click", function () { rate(false); });
    box.appendChild(yes); box.appendChild(no);
    return box;
  }

  // ---- the widget API ----
  function call(method, path, body, retried) {
    return session().then(function (token) {
      return fetch(API + path, { method: method, headers: { Authorization: "Bearer " + token,
        "Content-Type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body),
        credentials: "omit", mode: "cors" });
    }).then(function (r) {
      if (r.status === 401 && !retried) { state.token = null; save(); return call(method, path, body, true); }
      return r.json().catch(function () { return {}; }).then(function (j) {
        if (r.ok) return j;
        var err = new Error((j && j.error) || ("The chat answered " + r.status + "."));
        err.status = r.status;
        throw err;
      });
    });
  }
  var starting = null;
  function session() {
    var live = state.token && (!state.expiresAt || Date.parse(state.expiresAt) > Date.now() + 60000);
    if (live) return Promise.resolve(state.token);
    if (starting) return starting;
    var body = state.visitorId ? { visitorId: state.visitorId } : {};
    starting = fetch(API + "/widget/v1/sessions", { method: "POST", headers: { Authorization: "Bearer " + KEY,
      "Content-Type": "application/json" }, body: JSON.stringify(body), credentials: "omit", mode: "cors" })
      .then(function (r) {
        return r.json().catch(function () { return {}; }).then(function (j) {
          if (!r.ok || !j.session) throw new Error((j && j.error) || "The chat is not available on this page.");
          state.token = j.session.token; state.expiresAt = j.session.expiresAt; state.visitorId = j.session.visitorId;
          save();
          return state.token;
        });
      });
    starting.then(function () { starting = null; }, function () { starting = null; });
    return starting;
  }

  function refresh() {
    if (!state.conversationId) { loadedOnce = true; return Promise.resolve(); }
    return call("GET", "/widget/v1/conversations/" + encodeURIComponent(state.conversationId) + "/messages?limit=100")
      .then(function (j) {
        loadedOnce = true;
        (j.messages || j.data || []).forEach(function (m) { show(m, false); });
        person.hidden = false;
        say("");
      }, function (e) {
        if (e.status === 404) { state.conversationId = null; save(); person.hidden = true; return; }
        say(e.message, true);
      });
  }

  function submit() {
    var text = input.value.trim();
    if (!text || sending) return;
    sending = true; send.disabled = true; say("Sending\u2026");
    var done = state.conversationId
      ? call("POST", "/widget/v1/conversations/" + encodeURIComponent(state.conversationId) + "/messages",
        { body: text }).then(function (j) { show(j.message, false); })
      : call("POST", "/widget/v1/conversations", { body: text }).then(function (j) {
        var c = j.conversation || {};
        state.conversationId = c.id; save();
        if (j.message) show(j.message, false);
        person.hidden = false;
        follow();
        return refresh();
      });
    done.then(function () { input.value = ""; say(""); }, function (e) { say(e.message, true); })
      .then(function () { sending = false; send.disabled = false; input.focus(); });
  }

  function handoff() {
    if (!state.conversationId) return;
    person.disabled = true;
    call("POST", "/widget/v1/conversations/" + encodeURIComponent(state.conversationId) + "/handoff", {})
      .then(function () { say("A person has been asked to join; they will answer here."); },
        function (e) { say(e.message, true); person.disabled = false; });
  }

  // ---- live replies ----
  function follow() {
    if (source || !state.conversationId) return;
    session().then(function (token) {
      if (source) return;
      source = new EventSource(API + "/widget/v1/stream?session=" + encodeURIComponent(token));
      var first = true;
      source.addEventListener("open", function () {
        backoff = 1000;
        // After a lost connection, what came meanwhile is fetched again (shown ones are skipped).
        if (!first) refresh();
        first = false;
      });
      source.addEventListener("message.created", function (e) {
        try { var ev = JSON.parse(e.data); show(ev.data && ev.data.object, true); } catch (x) { /* ignore */ }
      });
      source.addEventListener("conversation.updated", function (e) {
        try {
          var c = JSON.parse(e.data).data.object;
          if (!c || c.id !== state.conversationId) return;
          if (c.status === "solved") { say("This conversation is marked solved."); askedAt = null; }
          else if (c.handoff && c.handoff.requestedAt !== askedAt) say("A person from the team will answer here.");
          // Said once per hand-over; the button comes back once none is pending.
          askedAt = c.handoff ? c.handoff.requestedAt : null;
          person.hidden = !!c.handoff;
        } catch (x) { /* ignore */ }
      });
      source.addEventListener("error", function () {
        if (source && source.readyState === 2) {
          // Closed for good (the session expired or was refused): start again with a new session.
          source = null; state.token = null; save();
          setTimeout(follow, backoff); backoff = Math.min(backoff * 2, 60000);
        }
      });
    }, function (e) { say(e.message, true); setTimeout(follow, backoff); backoff = Math.min(backoff * 2, 60000); });
  }

  window.__supportWidget = { open: open, close: function () { close(false); } };
  if (state.conversationId) { follow(); refresh(); }
})();
`;

/** The widget script's text, as served by `GET /widget.js`. */
export const WIDGET_JS = SCRIPT;
