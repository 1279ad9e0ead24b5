// The API as the pages use it: requests with the tab's token, Server-Sent
// Events read with fetch (EventSource sends no headers, so no token), and
// the small formatting helpers every page shares.

export const $ = (s, el = document) => el.querySelector(s);
export const $$ = (s, el = document) => [...el.querySelectorAll(s)];
export const esc = s => String(s ?? "").replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }[c]));
export const enc = encodeURIComponent;

let streams = [];   // AbortControllers of the current page's streams
let retry = () => {};

/// What to do once a token has been given: show the page again.
export function onToken(fn) { retry = fn; }

export function headers(extra) {
  const h = Object.assign({}, extra || {});
  const t = sessionStorage.getItem("pocketdock-token");
  if (t) h["Authorization"] = "Bearer " + t;
  return h;
}

export async function api(path, opts = {}) {
  const r = await fetch(path, Object.assign({}, opts, { headers: headers(opts.headers) }));
  if (r.status === 401) { askToken(); throw new Error("a token is needed"); }
  return r;
}

export async function json(path, opts) {
  const r = await api(path, opts);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error + (body.hint ? " (" + body.hint + ")" : ""));
  return body;
}

export function post(path, body) {
  return json(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}) });
}

function askToken() {
  $("#main").innerHTML = `<div class="card"><p>This server needs its token.</p>
    <form id="tok"><input type="password" id="token" placeholder="token" size="40"> <button>Use</button></form>
    <p class="muted">It is kept for this tab only (session storage).</p></div>`;
  $("#tok").onsubmit = e => { e.preventDefault(); sessionStorage.setItem("pocketdock-token", $("#token").value.trim()); retry(); };
}

/// An AbortController that the next page change aborts.
export function pageSignal() {
  const ctl = new AbortController();
  streams.push(ctl);
  return ctl;
}

export function stopStreams() { streams.forEach(s => s.abort()); streams = []; }

// Server-Sent Events over fetch: resumes with Last-Event-ID when the
// connection drops before the server closes the stream.
export function sse(path, onEvent, onEnd) {
  const ctl = pageSignal();
  let last = null;
  (async () => {
    for (let tries = 0; tries < 20 && !ctl.signal.aborted; tries++) {
      try {
        const h = last ? { "Last-Event-ID": String(last) } : {};
        const r = await fetch(path, { headers: headers(h), signal: ctl.signal });
        if (!r.ok) break;
        const reader = r.body.getReader();
        const dec = new TextDecoder();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) { onEnd && onEnd(); return; }
          buf += dec.decode(value, { stream: true });
          let i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, i); buf = buf.slice(i + 2);
            let id = null, data = "";
            for (const line of block.split("\n")) {
              if (line.startsWith("id:")) id = line.slice(3).trim();
              else if (line.startsWith("data:")) data += line.slice(5).replace(/^ /, "");
            }
            if (id) last = id;
            if (data) onEvent(JSON.parse(data));
          }
        }
      } catch (e) {
        if (ctl.signal.aborted) return;
        await new Promise(r => setTimeout(r, 500));
      }
    }
  })();
  return ctl;
}

export function dur(ms) { return ms == null ? "" : ms < 1000 ? ms + " ms" : (ms / 1000).toFixed(1) + " s"; }
export function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + units[i];
}
export function since(a, b) { return a && b ? dur(new Date(b) - new Date(a)) : ""; }
export function badge(s) { return `<span class="st ${esc(s)}">${esc(s)}</span>`; }

/// Statuses a step ends badly with, whose reason the run page shows.
export const FAILED = new Set(["failed", "timed_out"]);

/// Why a step failed: the record's reason, else its exit code.
export function why(step) {
  if (step.reason) return step.reason;
  if (step.exit_code != null && step.exit_code !== 0) return `exit code ${step.exit_code}`;
  return "";
}
