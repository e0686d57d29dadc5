/**
 * The chat widget and the inbox in a real browser (docs/widget.md, docs/web.md#inbox): a page on a second loopback
 * origin, under a strict CSP, embeds the snippet; the visitor opens the widget (keyboard: focus in, Esc out) and
 * writes; the message shows in a signed-in person's open inbox within 1 s without a reload; the reply shows in the
 * widget within 1 s; a reload shows the whole thread; a page on an origin not allowed gets no session (CORS). The
 * inbox and agents pages fit 390 and 1280 px. Screenshots to test/artifacts/ (docs/screenshots/ with
 * UPDATE_SCREENSHOTS=1). Without Chromium: skipped, saying why.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.js';
import { Browser, browserOrLoudSkip, hostSite, screenshotDir, signInOwner, within } from '../helpers/browser.js';

const SHOTS = screenshotDir();
const PASSWORD = 'correct horse battery staple';
const chromium = browserOrLoudSkip();

const W = 'document.querySelector("[data-support-widget]").shadowRoot';
const logText = `(${W}.querySelector(".log").innerText)`;

test('in Chromium: the widget on another origin, the inbox live both ways, reload, a refused origin',
  { skip: 'reason' in chromium ? chromium.reason : false, timeout: 180_000 }, async () => {
  const srv = await startTestServer();
  srv.watch(PASSWORD);
  const path = (chromium as { path: string }).path;
  const closers: Array<() => Promise<unknown>> = [];
  try {
    const made = await srv.call<{ agent: { id: string; widgetKey: string } }>('POST', '/api/v1/agents', { body: { name: 'Shop helper' } });
    assert.equal(made.status, 201);
    const { id: agentId, widgetKey } = made.body.agent;
    const api = srv.url;
    const snippet = `<script src="${api}/widget.js" data-key="${widgetKey}" async></script>`;
    const site = await hostSite(snippet, api);
    const refused = await hostSite(snippet, api);
    closers.push(() => new Promise((r) => site.server.close(r)), () => new Promise((r) => refused.server.close(r)));

    // The person: signs in, allows the site's origin on the agents page, opens the inbox.
    const person = await Browser.launch(path, { width: 1280, height: 900 });
    closers.push(() => person.close());
    await signInOwner(person, srv.ownerLink, PASSWORD);
    await person.goto(`${srv.url}/settings/agents`);
    await person.fill(`#origins-${agentId}`, site.origin);
    await person.clickAndWait(`form[action="/settings/agents/${agentId}/origins"] button[type=submit]`);
    assert.match((await person.state()).text, /The allowed origins are saved\./);
    assert.equal(await person.eval(`document.querySelector('#snippet-${agentId}').value`), snippet.replace(api, srv.url),
      'the snippet on the agents page (the test embeds it with the stand-in\'s origin when there is one)');
    await person.goto(`${srv.url}/settings/inbox`);
    await within(person, 'document.querySelector("[data-live-ready]") !== null', 2000, 'the inbox script started');

    // The visitor: the widget on the site, closed, then opened with the keyboard in mind.
    const visitor = await Browser.launch(path, { width: 1280, height: 800 });
    closers.push(() => visitor.close());
    await visitor.goto(site.origin + '/');
    await within(visitor, `!!document.querySelector("[data-support-widget]")`, 3000, 'the widget drew its launcher');
    await visitor.screenshot(SHOTS + 'widget-closed.png');
    await visitor.eval(`${W}.querySelector(".launcher").click()`);
    assert.equal(await visitor.eval(`${W}.activeElement && ${W}.activeElement.id`), 'sw-input', 'focus moves into the panel');
    assert.equal(await visitor.eval(`${W}.querySelector(".launcher").getAttribute("aria-expanded")`), 'true');
    assert.equal(await visitor.eval(`${W}.querySelector(".log").getAttribute("aria-live")`), 'polite');
    await visitor.eval(`(() => { const i = ${W}.querySelector("#sw-input"); i.value = "Hello, where is my order #42?"; ${W}.querySelector(".send").click(); })()`);
    await within(visitor, `${logText}.includes("where is my order #42?")`, 5000, 'the visitor\'s message shown');
    const toInbox = await within(person, 'document.body.innerText.includes("where is my order #42?")', 1000, 'the message in the open inbox');
    process.stderr.write(`widget → inbox: ${Math.round(toInbox)} ms\n`);
    await visitor.screenshot(SHOTS + 'widget-open.png');

    // Esc closes the panel and gives the focus back to the launcher.
    await visitor.send('Input.dispatchKeyEvent', { type: 'keyDown', key: 'Escape', code: 'Escape', windowsVirtualKeyCode: 27 });
    await visitor.send('Input.dispatchKeyEvent', { type: 'keyUp', key: 'Escape', code: 'Escape', windowsVirtualKeyCode: 27 });
    assert.equal(await visitor.eval(`${W}.querySelector(".panel").hidden`), true, 'Esc closed the panel');
    assert.equal(await visitor.eval(`${W}.activeElement && ${W}.activeElement.className`), 'launcher', 'focus back on the launcher');
    await visitor.eval(`${W}.querySelector(".launcher").click()`);

    // The person opens the conversation and replies; the reply shows in the widget within 1 s.
    await person.clickAndWait('ul.inbox-list a');
    assert.match((await person.state()).text, /where is my order #42\?/);
    await person.fill('#body', 'It ships tomorrow.');
    await person.clickAndWait('form.reply button[type=submit]');
    const conversationPath = await person.eval<string>('location.pathname');
    const toWidget = await within(visitor, `${logText}.includes("It ships tomorrow.")`, 1000, 'the reply in the widget');
    process.stderr.write(`inbox → widget: ${Math.round(toWidget)} ms after the reply page loaded\n`);
    await person.screenshot(SHOTS + 'inbox.png', 1100);
    // The visitor writes again: the open conversation shows it without a reload.
    await visitor.eval(`(() => { const i = ${W}.querySelector("#sw-input"); i.value = "Thanks!"; ${W}.querySelector(".send").click(); })()`);
    await within(person, 'document.querySelector("ol.thread").innerText.includes("Thanks!")', 1000, 'the second message in the open conversation');

    // A reload resumes the conversation with the whole thread.
    await visitor.goto(site.origin + '/');
    await within(visitor, `!!document.querySelector("[data-support-widget]")`, 3000, 'the widget after a reload');
    await visitor.eval(`${W}.querySelector(".launcher").click()`);
    await within(visitor, `${logText}.includes("where is my order #42?") && ${logText}.includes("It ships tomorrow.") && ${logText}.includes("Thanks!")`, 3000, 'the whole thread after a reload');

    // On a phone: the open panel takes the whole width; the page does not scroll sideways.
    await visitor.resize(390, 844);
    await visitor.goto(site.origin + '/');
    await within(visitor, `!!document.querySelector("[data-support-widget]")`, 3000, 'the widget at 390 px');
    await visitor.eval(`${W}.querySelector(".launcher").click()`);
    await within(visitor, `${logText}.includes("Thanks!")`, 3000, 'the thread at 390 px');
    assert.equal(await visitor.eval(`Math.round(${W}.querySelector(".panel").getBoundingClientRect().width)`), 390);
    assert.ok((await visitor.fitsWidth()).fits);
    await visitor.screenshot(SHOTS + 'widget-390.png');

    // An origin that is not allowed: no session (the browser refuses the answer without CORS headers).
    await visitor.resize(1280, 800);
    await visitor.goto(refused.origin + '/');
    const outcome = await visitor.eval<string>(`fetch(${JSON.stringify(api + '/widget/v1/sessions')}, { method: "POST", headers: { Authorization: "Bearer ${widgetKey}", "Content-Type": "application/json" }, body: "{}" }).then((r) => "answered " + r.status, (e) => "refused: " + e.message)`);
    assert.match(outcome, /^refused: /, `a page on ${refused.origin} must get no session`);
    process.stderr.write(`CORS: a page on ${refused.origin} (not in allowedOrigins) got no session: ${outcome}\n`);
    await within(visitor, `!!document.querySelector("[data-support-widget]")`, 3000, 'the widget on the refused origin');
    await visitor.eval(`${W}.querySelector(".launcher").click()`);
    await visitor.eval(`(() => { const i = ${W}.querySelector("#sw-input"); i.value = "hi"; ${W}.querySelector(".send").click(); })()`);
    await within(visitor, `${W}.querySelector(".status").className.includes("bad")`, 3000, 'the widget says it cannot start');
    assert.equal(await visitor.eval(`Object.keys(localStorage).filter((k) => localStorage.getItem(k).includes("svcs_")).length`), 0, 'no session token stored');

    // The inbox and agents pages fit 390 and 1280 px.
    for (const width of [390, 1280]) {
      await person.resize(width, 900);
      for (const p of ['/settings/inbox', conversationPath, '/settings/agents']) {
        await person.goto(srv.url + p);
        const fit = await person.fitsWidth();
        assert.ok(fit.fits, `${p} at ${width} px: scrollWidth ${fit.scrollWidth} > ${fit.innerWidth} (${fit.widest})`);
      }
      await person.goto(`${srv.url}/settings/agents`);
      await person.screenshot(`${SHOTS}agents-${width}.png`, 1400);
    }
  } finally {
    for (const c of closers.reverse()) await c().catch(() => {});
    await srv.close();
  }
});
