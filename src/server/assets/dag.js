// The step DAG, top to bottom: one band per depth along `needs`, its nodes
// flowed left to right and wrapped to the panel's width, so no node
// overlaps another or leaves the panel at any width. The instances of one
// matrix step are framed as a group that collapses into a single node.
// A node shows as much of its id as fits; the whole id is its title.
import { esc } from "./api.js";

const NS = "http://www.w3.org/2000/svg";
const H = 32, GAP = 14, BAND = 44, PAD = 10, HEAD = 22, INSET = 8;

/// An instance id without its matrix part: the key of its group.
export const groupOf = id => id.replace(/\[[^\]]*\]$/, "");
export const matrixOf = id => (id.match(/\[([^\]]*)\]$/) || [])[1] || id;

// The status a collapsed group shows: its most telling member's.
const RANK = ["running", "failed", "timed_out", "cancelled", "pending", "failed_allowed", "skipped", "cached", "succeeded"];
export function groupStatus(statuses) {
  let best = RANK.length - 1;
  for (const s of statuses) best = Math.min(best, RANK.indexOf(s) < 0 ? best : RANK.indexOf(s));
  return RANK[best];
}

export function createDag(el, steps, onSelect) {
  const byId = new Map(steps.map(s => [s.id, s]));
  const members = new Map();
  steps.forEach(s => { const g = groupOf(s.id); members.set(g, (members.get(g) || []).concat(s.id)); });
  const grouped = g => members.get(g).length > 1;
  // Big matrices start collapsed; the user's choice is kept across redraws.
  const collapsed = new Set([...members.keys()].filter(g => members.get(g).length > 8));
  let selected = null;

  const depth = new Map();
  const d = id => {
    if (depth.has(id)) return depth.get(id);
    depth.set(id, 0);
    const needs = (byId.get(id)?.needs || []).filter(n => byId.has(n));
    const v = needs.length ? 1 + Math.max(...needs.map(d)) : 0;
    depth.set(id, v);
    return v;
  };
  steps.forEach(s => d(s.id));
  // A group sits in the band of its deepest member, below all it needs.
  const bandOf = id => grouped(groupOf(id)) ? Math.max(...members.get(groupOf(id)).map(m => depth.get(m))) : depth.get(id);

  function draw() {
    const width = Math.max(el.clientWidth, 200);
    const nw = Math.min(240, width - 2 * PAD - 2 * INSET);
    const bands = [];
    const seen = new Set();
    for (const s of steps) {
      const g = groupOf(s.id);
      const key = grouped(g) ? g : s.id;
      if (seen.has(key)) continue;
      seen.add(key);
      const b = bandOf(s.id);
      (bands[b] = bands[b] || []).push(key);
    }
    const pos = new Map();     // step id or collapsed group -> {x, y}
    const frames = [];         // expanded groups: {g, x, y, w, h}
    let y = PAD;
    for (const band of bands.filter(Boolean)) {
      y = flow(band, y, width, nw, pos, frames) + BAND;
    }
    const height = y - BAND + PAD;
    const at = id => pos.get(id) || pos.get(groupOf(id));
    let svg = `<svg width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`;
    const edges = new Set();
    for (const s of steps) for (const n of s.needs) {
      const a = at(n), b = at(s.id);
      if (!a || !b || a === b) continue;
      const k = `${a.x},${a.y},${b.x},${b.y}`;
      if (edges.has(k)) continue;
      edges.add(k);
      const x1 = a.x + nw / 2, y1 = a.y + H, x2 = b.x + nw / 2, y2 = b.y;
      svg += `<path class="edge" d="M${x1},${y1} C${x1},${y1 + BAND / 2} ${x2},${y2 - BAND / 2} ${x2},${y2}"/>`;
    }
    for (const f of frames) {
      svg += `<g class="group" data-group="${esc(f.g)}"><rect class="frame" x="${f.x}" y="${f.y}" width="${f.w}" height="${f.h}" rx="8"/>
        <g class="group-head" data-group="${esc(f.g)}" role="button"><title>${esc(f.g)}: collapse its ${members.get(f.g).length} instances</title>
        <rect class="hit" x="${f.x}" y="${f.y}" width="${f.w}" height="${HEAD}"/>
        <text class="head" x="${f.x + INSET}" y="${f.y + 15}" data-room="${f.w - 2 * INSET}">▾ ${esc(f.g)} (${members.get(f.g).length})</text></g></g>`;
    }
    for (const [key, p] of pos) {
      if (members.has(key) && grouped(key) && collapsed.has(key)) {
        const ids = members.get(key);
        const title = `${key}: ${ids.length} instances\n` + ids.map(m => `${m}: ${byId.get(m).status}`).join("\n");
        svg += node(`class="node group" data-group="${esc(key)}" data-status="${groupStatus(ids.map(m => byId.get(m).status))}"`,
          title, `▸ ${key} ×${ids.length}`, p, nw);
      } else {
        const label = grouped(groupOf(key)) ? matrixOf(key) : key;
        svg += node(`class="node" data-step="${esc(key)}" data-status="${esc(byId.get(key).status)}"`, key, label, p, nw);
      }
    }
    el.innerHTML = svg + "</svg>";
    el.querySelectorAll("svg text").forEach(fit);
    el.querySelectorAll("g.node[data-step]").forEach(n => n.onclick = () => onSelect(n.dataset.step));
    el.querySelectorAll("g.node.group").forEach(n => n.onclick = () => { collapsed.delete(n.dataset.group); draw(); });
    el.querySelectorAll("g.group-head").forEach(n => n.onclick = () => { collapsed.add(n.dataset.group); draw(); });
    mark();
  }

  // Lay out one band from `y`: single nodes and groups flowed into lines.
  // Returns the band's bottom.
  function flow(band, y, width, nw, pos, frames) {
    const max = width - 2 * PAD;
    let x = PAD, lineH = 0;
    const place = (w, h) => {
      if (x > PAD && x + w > PAD + max) { y += lineH + GAP; x = PAD; lineH = 0; }
      const at = { x, y };
      x += w + GAP; lineH = Math.max(lineH, h);
      return at;
    };
    for (const key of band) {
      if (!members.has(key) || !grouped(key) || collapsed.has(key)) { pos.set(key, place(nw, H)); continue; }
      const ids = members.get(key);
      const perLine = Math.max(1, Math.floor((max - 2 * INSET + GAP) / (nw + GAP)));
      const cols = Math.min(ids.length, perLine), lines = Math.ceil(ids.length / cols);
      const w = cols * (nw + GAP) - GAP + 2 * INSET, h = HEAD + lines * (H + GAP) - GAP + INSET;
      const f = place(w, h);
      frames.push({ g: key, x: f.x, y: f.y, w, h });
      ids.forEach((m, i) => pos.set(m, {
        x: f.x + INSET + (i % cols) * (nw + GAP),
        y: f.y + HEAD + Math.floor(i / cols) * (H + GAP),
      }));
    }
    return y + lineH;
  }

  function mark() {
    el.querySelectorAll("g.node[data-step]").forEach(n => n.classList.toggle("sel", n.dataset.step === selected));
    el.querySelectorAll("g.node.group").forEach(n => n.classList.toggle("sel", !!selected && groupOf(selected) === n.dataset.group));
  }

  let width = 0;
  new ResizeObserver(() => { if (el.isConnected && el.clientWidth !== width) { width = el.clientWidth; draw(); } }).observe(el);
  draw();

  return {
    /// A step's status changed.
    status(id, status) {
      const s = byId.get(id);
      if (!s) return;
      s.status = status;
      const n = el.querySelector(`g.node[data-step="${CSS.escape(id)}"]`);
      if (n) n.setAttribute("data-status", status);
      const g = el.querySelector(`g.node.group[data-group="${CSS.escape(groupOf(id))}"]`);
      if (g) g.setAttribute("data-status", groupStatus(members.get(groupOf(id)).map(m => byId.get(m).status)));
    },
    select(id) { selected = id; mark(); },
  };
}

function node(attrs, title, label, p, nw) {
  return `<g ${attrs}><title>${esc(title)}</title>
    <rect x="${p.x}" y="${p.y}" width="${nw}" height="${H}" rx="6"/>
    <text x="${p.x + 8}" y="${p.y + 20}" data-room="${nw - 16}">${esc(label)}</text></g>`;
}

// Cut a label to the room it has, with an ellipsis; the title keeps it whole.
function fit(text) {
  const full = text.textContent, room = Number(text.dataset.room);
  if (text.getComputedTextLength() <= room) return;
  let lo = 0, hi = full.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    text.textContent = full.slice(0, mid) + "…";
    if (text.getComputedTextLength() <= room) lo = mid; else hi = mid - 1;
  }
  text.textContent = full.slice(0, lo) + "…";
}
