// One job's page: its DAG, its timeline, its steps and artifacts, and the
// selected step's detail, all kept current from the job's events. Until
// the user picks a step, the running one is selected and its log followed.
import { $, $$, esc, enc, json, post, sse, api, badge, dur, since, why, FAILED } from "./api.js";
import { createDag, groupOf, groupStatus, matrixOf } from "./dag.js";
import { createTimeline } from "./timeline.js";
import { createDetail } from "./detail.js";

export async function runPage(id) {
  const rec = await json(`/v1/jobs/${enc(id)}`);
  $("#main").innerHTML = `<div class="card row">
      <div><b>${esc(rec.id)}</b> &nbsp; <span id="job-status">${badge(rec.status)}</span></div>
      <div class="muted">started ${esc(new Date(rec.started).toLocaleString())} · <span id="job-dur">${since(rec.started, rec.finished)}</span></div>
      <button class="danger" id="cancel" ${rec.status === "running" ? "" : "disabled"}>Cancel</button>
      <span id="msg" class="err"></span></div>
    <div class="card" id="failures-card" hidden><b>Failed steps</b><ul id="failures"></ul></div>
    <div class="card" id="dag-panel"><div id="dag"></div></div>
    <div class="card"><b>Timeline</b> <span class="muted">(steps by sandbox)</span><div id="timeline"></div></div>
    <div class="cols">
      <div class="card" id="detail"></div>
      <div class="card" id="steps-panel"><table id="steps"><thead><tr><th class="c-step">step</th><th class="c-st">status</th><th class="c-exit">exit</th>
        <th class="c-dur">duration</th><th class="c-att">attempts</th><th>reason</th></tr></thead><tbody></tbody></table>
        <h4>Artifacts</h4><ul id="artifacts"></ul></div>
    </div>`;
  const steps = new Map(rec.steps.map(s => [s.id, Object.assign({}, s)]));
  let chosen = false;   // the user picked a step: stop following the running one
  const detail = createDetail($("#detail"), id);
  const pick = (sid, byUser) => {
    const s = steps.get(sid);
    if (!s) return;
    if (byUser) chosen = true;
    dag.select(sid); detail.show(s); markRow(sid);
  };
  const dag = createDag($("#dag"), [...steps.values()], sid => pick(sid, true));
  const timeline = createTimeline($("#timeline"), [...steps.values()], sid => pick(sid, true));
  const folded = new Set();   // matrix steps whose rows are folded
  const table = () => drawSteps(steps, sid => pick(sid, true), detail.selected, folded);
  const arts = list => drawArtifacts(id, list);
  table(); arts(rec.artifacts); failures(steps);
  pick(initial([...steps.values()]), false);

  // A running job's duration counts up until it ends.
  const durEl = $("#job-dur");
  const clock = rec.status !== "running" ? null : setInterval(() => {
    if (!durEl.isConnected) { clearInterval(clock); return; }
    durEl.textContent = Math.round((Date.now() - Date.parse(rec.started)) / 1000) + " s";
  }, 1000);
  $("#cancel").onclick = async () => {
    $("#cancel").disabled = true;
    try { await post(`/v1/jobs/${enc(id)}/cancel`); } catch (err) { $("#msg").textContent = err.message; }
  };
  sse(`/v1/jobs/${enc(id)}/events`, ev => {
    const s = steps.get(ev.step);
    if (ev.event === "step_started" && s) {
      timeline.started(ev.step, ev.ts);
      // The history replays from its start: a step the record already
      // shows ended is not running again unless this is a new attempt.
      if (s.status !== "pending" && s.status !== "running" && (s.attempts || 0) >= ev.attempt) return;
      Object.assign(s, { status: "running", attempts: ev.attempt });
      dag.status(ev.step, "running"); detail.changed(s); table();
      const current = steps.get(detail.selected);
      if (!chosen && (!current || current.status !== "running")) pick(ev.step, false);
    }
    if (ev.event === "step_finished" && s) {
      timeline.finished(ev.step, ev.ts, ev.status);
      Object.assign(s, { status: ev.status, exit_code: ev.exit_code, duration_ms: ev.duration_ms, attempts: ev.attempts, reason: ev.reason, usage: ev.usage });
      dag.status(ev.step, ev.status); detail.changed(s); table(); failures(steps);
      // The record lists new artifacts with their URLs.
      if ((ev.artifacts || []).length) json(`/v1/jobs/${enc(id)}`).then(r => arts(r.artifacts)).catch(() => {});
      if (!chosen && detail.selected === ev.step) {
        const next = [...steps.values()].find(x => x.status === "running");
        if (next) pick(next.id, false);
      }
    }
    if (ev.event === "step_progress" && s) detail.progress(ev);
    if (ev.event === "job_finished") {
      clearInterval(clock);
      $("#job-status").innerHTML = badge(ev.status); $("#job-dur").textContent = dur(ev.duration_ms);
      $("#cancel").disabled = true;
    }
  });
}

// The step shown first: a running one, else the first that failed, else the first.
function initial(list) {
  return (list.find(s => s.status === "running") || list.find(s => FAILED.has(s.status)) || list[0] || {}).id;
}

// The steps, a matrix step's instances under a row of their own that
// folds them away.
function drawSteps(steps, onPick, selected, folded) {
  const list = [...steps.values()];
  const groups = new Map();
  list.forEach(s => groups.set(groupOf(s.id), (groups.get(groupOf(s.id)) || []).concat(s)));
  let html = "";
  for (const [g, members] of groups) {
    if (members.length === 1) { html += stepRow(members[0], members[0].id); continue; }
    html += `<tr class="group-row" data-group="${esc(g)}"><td colspan="6"><a href="#" data-fold="${esc(g)}">${folded.has(g) ? "▸" : "▾"} ${esc(g)}</a>
      <span class="muted">${members.length} instances</span> ${badge(groupStatus(members.map(m => m.status)))}</td></tr>`;
    if (!folded.has(g)) html += members.map(m => stepRow(m, matrixOf(m.id), "member")).join("");
  }
  $("#steps tbody").innerHTML = html;
  $$("#steps [data-pick]").forEach(a => a.onclick = e => { e.preventDefault(); onPick(a.dataset.pick); });
  $$("#steps [data-fold]").forEach(a => a.onclick = e => {
    e.preventDefault();
    if (!folded.delete(a.dataset.fold)) folded.add(a.dataset.fold);
    drawSteps(steps, onPick, $("#steps tbody tr.sel")?.dataset.step, folded);
  });
  markRow(selected);
}

function stepRow(s, label, cls = "") {
  return `<tr data-step="${esc(s.id)}" class="${cls}">
    <td class="c-step" title="${esc(s.id)}"><a href="#" data-pick="${esc(s.id)}">${esc(label)}</a></td><td>${badge(s.status)}</td>
    <td>${s.exit_code ?? ""}</td><td>${dur(s.duration_ms)}</td><td>${s.attempts || ""}</td>
    <td class="reason" title="${esc(s.reason)}">${esc(s.status === "succeeded" ? "" : why(s))}</td></tr>`;
}

function markRow(sid) {
  $$("#steps tbody tr").forEach(r => r.classList.toggle("sel", r.dataset.step === sid));
}

// Every failed step with why, at the top of the page.
function failures(steps) {
  const failed = [...steps.values()].filter(s => FAILED.has(s.status));
  $("#failures-card").hidden = !failed.length;
  $("#failures").innerHTML = failed.map(s => `<li class="failure" data-step="${esc(s.id)}"><b>${esc(s.id)}</b> ${badge(s.status)}
    <span class="reason">${esc(why(s) || "no reason recorded")}</span></li>`).join("");
}

function drawArtifacts(id, list) {
  $("#artifacts").innerHTML = list.map(a => {
    const name = (a.project_path || a.path).split("/").pop();
    return `<li><a href="#" data-url="${esc(a.url || "")}" data-name="${esc(name)}" title="${esc(a.project_path || a.path)}">${esc(a.project_path || name)}</a>
      <span class="muted">${a.size} B · ${esc(a.step)}</span></li>`;
  }).join("") || `<li class="muted">none</li>`;
  $$("#artifacts [data-url]").forEach(a => a.onclick = e => { e.preventDefault(); download(a.dataset.url, a.dataset.name); });
}

// Downloads go through fetch, so the token goes along.
async function download(url, name) {
  if (!url) { $("#msg").textContent = "this artifact lies outside the project: it is not served"; return; }
  const r = await api(url);
  if (!r.ok) { $("#msg").textContent = "download failed: " + r.status; return; }
  const blob = URL.createObjectURL(await r.blob());
  const a = document.createElement("a"); a.href = blob; a.download = name; a.click();
  setTimeout(() => URL.revokeObjectURL(blob), 1000);
}
