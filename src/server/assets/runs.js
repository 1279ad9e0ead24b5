// The jobs list: live status for running jobs, a form to start one, and a
// filter by status and name that hides the rows that do not match.
import { $, $$, esc, enc, json, post, sse, badge, dur, since } from "./api.js";

const STATUSES = ["running", "succeeded", "failed", "cancelled", "abandoned"];

export async function runsPage() {
  $("#main").innerHTML = `<div class="card row">
      <form id="start"><input id="manifest" placeholder="manifest path in the project" size="36"> <button>Start run</button></form>
      <button id="refresh">Refresh</button> <span id="msg" class="err"></span></div>
    <div class="card row" id="filters">
      <label>name <input id="filter-name" type="search" placeholder="part of the job or id" size="24"></label>
      <label>status <select id="filter-status"><option value="">any</option>
        ${STATUSES.map(s => `<option>${s}</option>`).join("")}</select></label>
      <span class="muted" id="filter-count"></span></div>
    <table id="runs"><thead><tr><th>job</th><th>status</th><th>steps</th><th>started</th><th>duration</th></tr></thead><tbody></tbody></table>`;
  $("#refresh").onclick = () => runsPage();
  $("#start").onsubmit = async e => {
    e.preventDefault();
    try { location.hash = "#/jobs/" + enc((await post("/v1/jobs", { manifest: $("#manifest").value })).id); }
    catch (err) { $("#msg").textContent = err.message; }
  };
  // The filter outlives a visit to a job page.
  const saved = JSON.parse(sessionStorage.getItem("pocketdock-filter") || "{}");
  $("#filter-name").value = saved.name || "";
  $("#filter-status").value = saved.status || "";
  const { jobs: runs } = await json("/v1/jobs?limit=200");
  const body = $("#runs tbody");
  body.innerHTML = runs.map(r => `<tr data-run="${esc(r.id)}" data-job="${esc(r.job)}" data-status="${esc(r.status)}">
      <td><a href="#/jobs/${enc(r.id)}">${esc(r.id)}</a></td><td class="status">${badge(r.status)}</td>
      <td class="steps">${r.steps_done}/${r.steps}</td><td>${esc(new Date(r.started).toLocaleString())}</td>
      <td class="dur">${since(r.started, r.finished)}</td></tr>`).join("") ||
    `<tr><td colspan="5" class="muted">No jobs yet.</td></tr>`;
  const filter = () => applyFilter(runs.length);
  $("#filter-name").oninput = filter;
  $("#filter-status").onchange = filter;
  filter();
  for (const r of runs.filter(r => r.status === "running")) follow(body, r, filter);
}

function applyFilter(total) {
  const name = $("#filter-name").value.trim().toLowerCase();
  const status = $("#filter-status").value;
  sessionStorage.setItem("pocketdock-filter", JSON.stringify({ name, status }));
  let shown = 0;
  for (const row of $$("#runs tbody tr[data-run]")) {
    const ok = (!status || row.dataset.status === status) &&
      (!name || row.dataset.run.toLowerCase().includes(name) || row.dataset.job.toLowerCase().includes(name));
    row.hidden = !ok;
    if (ok) shown++;
  }
  $("#filter-count").textContent = name || status ? `${shown} of ${total} shown` : "";
}

// A running job's row, kept current from its events.
function follow(body, r, filter) {
  const row = body.querySelector(`tr[data-run="${CSS.escape(r.id)}"]`);
  const done = new Set();
  sse(`/v1/jobs/${enc(r.id)}/events`, ev => {
    if (ev.event === "step_finished") { done.add(ev.step); $(".steps", row).textContent = `${Math.max(done.size, r.steps_done)}/${r.steps}`; }
    if (ev.event === "job_finished") {
      row.dataset.status = ev.status;
      $(".status", row).innerHTML = badge(ev.status); $(".dur", row).textContent = dur(ev.duration_ms);
      filter();
    }
  });
}
