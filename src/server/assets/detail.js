// The selected step's panel: its status, why it failed, the progress it
// reported (`step_progress` events) and its log, followed live while it
// runs (the log route with `follow=1` streams it as it grows).
import { $, esc, enc, headers, pageSignal, badge, dur, why, bytes } from "./api.js";

export function createDetail(el, jobId) {
  el.innerHTML = `<div class="detail-head"><b id="detail-title">Log</b> <span id="detail-status"></span>
      <span class="muted" id="detail-facts"></span> <span class="muted" id="log-state"></span></div>
    <div id="step-reason" class="err" hidden></div>
    <ul id="progress" hidden></ul>
    <pre id="log"></pre>`;
  const progress = new Map();   // step id -> its progress lines
  let step = null, ctl = null;

  function facts(s) {
    $("#detail-status", el).innerHTML = badge(s.status);
    const parts = [];
    if (s.exit_code != null) parts.push(`exit ${s.exit_code}`);
    if (s.duration_ms != null) parts.push(dur(s.duration_ms));
    if (s.attempts > 1) parts.push(`${s.attempts} attempts`);
    // What the command used, when the in-sandbox helper measured it.
    if (s.usage) parts.push(`cpu ${dur(s.usage.cpu_user_ms + s.usage.cpu_system_ms)}`, `peak ${bytes(s.usage.peak_memory_bytes)}`);
    $("#detail-facts", el).textContent = parts.join(" · ");
    const reason = s.status === "succeeded" ? "" : why(s);
    $("#step-reason", el).hidden = !reason;
    $("#step-reason", el).textContent = reason;
  }

  function line(ev) {
    const li = document.createElement("li");
    const data = ev.data && Object.keys(ev.data).length ? " " + JSON.stringify(ev.data) : "";
    li.textContent = [ev.status, ev.message].filter(Boolean).join(": ") + data;
    return li;
  }

  function drawProgress() {
    const list = $("#progress", el), lines = progress.get(step?.id) || [];
    list.replaceChildren(...lines.map(line));
    list.hidden = !lines.length;
  }

  async function follow(id) {
    if (ctl) ctl.abort();
    ctl = pageSignal();
    const mine = ctl;
    const pre = $("#log", el), state = $("#log-state", el);
    pre.textContent = "";
    pre.dataset.following = "1";
    state.textContent = "following";
    try {
      const r = await fetch(`/v1/jobs/${enc(jobId)}/steps/${enc(id)}/log?follow=1`, { headers: headers(), signal: mine.signal });
      const reader = r.body.getReader(), dec = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        // Keep the end in view unless the reader scrolled up.
        const atEnd = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 40;
        pre.textContent += dec.decode(value, { stream: true });
        if (atEnd) pre.scrollTop = pre.scrollHeight;
      }
    } catch (e) { /* aborted: another step was chosen, or the page left */ }
    if (mine === ctl) { pre.dataset.following = "0"; state.textContent = ""; }
  }

  return {
    get selected() { return step?.id; },
    show(s) {
      const again = step?.id === s.id;
      step = s;
      $("#detail-title", el).textContent = s.id;
      facts(s); drawProgress();
      if (!again) follow(s.id);
    },
    /// The step `s` changed (status, exit code, ...).
    changed(s) { if (step?.id === s.id) facts(s); },
    /// A `step_progress` event.
    progress(ev) {
      progress.set(ev.step, (progress.get(ev.step) || []).concat(ev));
      if (step?.id === ev.step) drawProgress();
    },
  };
}
