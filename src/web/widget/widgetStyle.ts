/**
 * The chat widget's style sheet (docs/widget.md): applied inside the widget's shadow root through a constructed
 * CSSStyleSheet, so the host page's styles do not reach it and its own do not leak out. Below 480 px wide the
 * panel takes the whole width of the screen.
 */

/** The widget's CSS text. */
export const WIDGET_CSS = `
:host { all: initial; }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
.launcher, .panel { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  font-size: 15px; line-height: 1.45; color: #1b1f24; }
.launcher { position: fixed; right: 20px; bottom: 20px; z-index: 2147483646; width: 56px; height: 56px;
  border-radius: 50%; border: 0; background: #0a5bd3; color: #ffffff; cursor: pointer;
  box-shadow: 0 4px 14px rgba(0, 0, 0, 0.25); display: flex; align-items: center; justify-content: center; }
.launcher .badge { position: absolute; top: -4px; right: -4px; min-width: 20px; height: 20px; padding: 0 5px;
  border-radius: 10px; background: #b42318; color: #ffffff; font-size: 12px; font-weight: 700; line-height: 20px;
  text-align: center; }
.launcher:focus-visible, button:focus-visible, textarea:focus-visible, .log:focus-visible {
  outline: 3px solid #80b3ff; outline-offset: 2px; }
.panel { position: fixed; right: 20px; bottom: 88px; z-index: 2147483647; width: 370px; max-width: calc(100vw - 40px);
  height: 540px; max-height: calc(100vh - 108px); display: flex; flex-direction: column; background: #ffffff;
  border: 1px solid #d0d7de; border-radius: 12px; box-shadow: 0 8px 30px rgba(0, 0, 0, 0.22); overflow: hidden; }
.head { display: flex; align-items: center; justify-content: space-between; gap: 8px; padding: 12px 14px;
  background: #0a5bd3; color: #ffffff; }
.head h2 { margin: 0; font-size: 16px; font-weight: 700; }
.close { border: 0; background: transparent; color: #ffffff; font-size: 26px; line-height: 1; width: 36px;
  height: 36px; border-radius: 6px; cursor: pointer; }
.empty { margin: 16px 14px 0; color: #57606a; }
.log { list-style: none; margin: 0; padding: 12px 14px; flex: 1; overflow-y: auto; display: flex;
  flex-direction: column; gap: 8px; }
.msg { max-width: 85%; padding: 8px 11px; border-radius: 12px; background: #eaeef2; align-self: flex-start;
  overflow-wrap: anywhere; }
.msg.mine { align-self: flex-end; background: #0a5bd3; color: #ffffff; }
.msg .who { display: block; font-size: 12px; font-weight: 700; opacity: 0.85; }
.msg .body { margin: 2px 0 0; white-space: pre-wrap; }
.msg time { display: block; font-size: 11px; opacity: 0.75; text-align: right; }
.msg .body a { color: inherit; text-decoration: underline; overflow-wrap: anywhere; }
.rate { display: flex; gap: 6px; margin-top: 6px; }
.rate button { border: 1px solid #8c959f; background: #ffffff; color: #1b1f24; border-radius: 999px;
  padding: 3px 10px; font: inherit; font-size: 12px; cursor: pointer; min-height: 28px; }
.rate button[aria-pressed="true"] { background: #0a5bd3; border-color: #0a5bd3; color: #ffffff; }
.rate button:disabled { opacity: 0.6; cursor: default; }
.status { margin: 0; padding: 0 14px; font-size: 13px; color: #57606a; min-height: 0; }
.status:empty { display: none; }
.status.bad { color: #b42318; }
.person { margin: 6px 14px 0; align-self: flex-start; border: 1px solid #8c959f; background: #ffffff;
  color: #1b1f24; border-radius: 999px; padding: 5px 12px; font: inherit; font-size: 13px; cursor: pointer; }
.compose { display: flex; gap: 8px; padding: 10px 14px 14px; border-top: 1px solid #d0d7de; margin-top: 8px; }
.compose textarea { flex: 1; min-width: 0; resize: none; font: inherit; padding: 8px 10px; border: 1px solid #8c959f;
  border-radius: 8px; color: #1b1f24; background: #ffffff; }
.send { border: 0; background: #0a5bd3; color: #ffffff; font: inherit; font-weight: 600; padding: 0 16px;
  border-radius: 8px; cursor: pointer; }
.send:disabled, .person:disabled { opacity: 0.6; cursor: default; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
@media (max-width: 480px) {
  .panel { left: 0; right: 0; bottom: 0; top: 0; width: 100%; max-width: none; height: auto; max-height: none;
    border-radius: 0; border: 0; }
  :host([data-open]) .launcher { display: none; }
}
`;
