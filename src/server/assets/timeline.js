// The timeline: one lane per sandbox, one bar per started step from its
// first start to its end (to now while it runs), on one time axis.
// Steps that overlap in a sandbox stack within its lane.
import { esc, dur } from "./api.js";

const ROW = 22, GAP = 4, AXIS = 20, PAD = 8;

export function createTimeline(el, steps, onSelect) {
  const sandboxOf = new Map(steps.map(s => [s.id, s.sandbox]));
  const bars = new Map();   // step id -> {start, end, status}
  let timer = null;

  function draw() {
    const live = [...bars.values()].filter(b => b.start);
    if (!live.length) { el.innerHTML = `<p class="muted">No step has started yet.</p>`; return; }
    const now = Date.now();
    const t0 = Math.min(...live.map(b => b.start));
    const t1 = Math.max(...live.map(b => b.end || now));
    const width = Math.max(el.clientWidth, 300);
    const label = Math.min(220, Math.floor(width / 4));
    const span = Math.max(t1 - t0, 1000);
    const scale = (width - label - 2 * PAD) / span;
    const x = t => label + PAD + (t - t0) * scale;
    // Lanes in the order their sandboxes started a step; bars by start.
    const lanes = new Map();
    for (const [id, b] of [...bars].filter(([, b]) => b.start).sort((a, c) => a[1].start - c[1].start)) {
      const sb = sandboxOf.get(id) || "?";
      if (!lanes.has(sb)) lanes.set(sb, []);
      lanes.get(sb).push([id, b]);
    }
    let y = AXIS, body = "";
    for (const [sb, list] of lanes) {
      const rows = [];   // each row's end, to stack overlapping bars
      let inner = "";
      for (const [id, b] of list) {
        const end = b.end || now;
        let r = rows.findIndex(e => e <= b.start);
        if (r < 0) { r = rows.length; rows.push(0); }
        rows[r] = end;
        const bx = x(b.start), w = Math.max(2, x(end) - bx);
        inner += `<rect class="bar" data-step="${esc(id)}" data-status="${esc(b.status)}" data-start="${b.start}"
          x="${bx.toFixed(1)}" y="${y + r * (ROW + GAP)}" width="${w.toFixed(1)}" height="${ROW}" rx="3"><title>${esc(id)}: ${b.end ? dur(b.end - b.start) : "running"}</title></rect>`;
      }
      const h = rows.length * (ROW + GAP) - GAP;
      body += `<g class="lane" data-sandbox="${esc(sb)}"><title>${esc(sb)}</title>
        <text class="lane-name" x="${PAD}" y="${y + 15}" data-room="${label - PAD}">${esc(sb)}</text>${inner}</g>`;
      y += h + 2 * GAP;
    }
    let axis = "";
    const step = niceStep(span / 6);
    for (let t = 0; t <= span; t += step) {
      axis += `<line class="tick" x1="${x(t0 + t)}" x2="${x(t0 + t)}" y1="${AXIS - 4}" y2="${y}"/>`;
      // A label too near the right edge would be cut: the line says enough.
      if (x(t0 + t) + 44 <= width) axis += `<text class="tick-label" x="${x(t0 + t) + 2}" y="12">${dur(t)}</text>`;
    }
    el.innerHTML = `<svg width="${width}" height="${y}" viewBox="0 0 ${width} ${y}">${axis}${body}</svg>`;
    el.querySelectorAll("text.lane-name").forEach(t => {
      const room = Number(t.dataset.room);
      while (t.getComputedTextLength() > room && t.textContent.length > 2) t.textContent = t.textContent.slice(0, -2) + "…";
    });
    el.querySelectorAll("rect.bar").forEach(r => r.onclick = () => onSelect(r.dataset.step));
  }

  // Running bars grow with the clock.
  function tick() {
    const running = [...bars.values()].some(b => b.start && !b.end);
    if (running && !timer) timer = setInterval(() => { if (!el.isConnected) { clearInterval(timer); return; } draw(); }, 1000);
    if (!running && timer) { clearInterval(timer); timer = null; }
  }

  let width = 0;
  new ResizeObserver(() => { if (el.isConnected && el.clientWidth !== width) { width = el.clientWidth; draw(); } }).observe(el);

  return {
    started(id, ts) {
      const b = bars.get(id) || { start: null, end: null, status: "running" };
      if (!b.start) b.start = Date.parse(ts);
      b.end = null; b.status = "running";
      bars.set(id, b); draw(); tick();
    },
    finished(id, ts, status) {
      const b = bars.get(id);
      if (!b) return;   // never started: a skipped step has no bar
      b.end = Date.parse(ts); b.status = status;
      draw(); tick();
    },
  };
}

// A round axis step: 1, 2 or 5 times a power of ten milliseconds.
function niceStep(ms) {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(ms, 1))));
  return [1, 2, 5, 10].map(m => m * p).find(s => s >= ms);
}
