// The dashboard's router: one page per hash (#/, #/jobs/ID, #/sandboxes;
// #/runs/ID, the first name of a job's page, is kept).
import { $, json, onToken, stopStreams, esc } from "./api.js";
import { runsPage } from "./runs.js";
import { runPage } from "./run.js";
import { sandboxesPage } from "./sandboxes.js";

async function route() {
  stopStreams();
  const h = location.hash || "#/";
  $("#nav-runs").classList.toggle("on", !h.startsWith("#/sandboxes"));
  $("#nav-sandboxes").classList.toggle("on", h.startsWith("#/sandboxes"));
  try {
    const job = ["#/jobs/", "#/runs/"].find(p => h.startsWith(p));
    if (job) await runPage(decodeURIComponent(h.slice(job.length)));
    else if (h.startsWith("#/sandboxes")) await sandboxesPage();
    else await runsPage();
  } catch (err) {
    if (!$("#tok")) $("#main").innerHTML = `<div class="card err">${esc(err.message)}</div>`;
  }
}

onToken(route);
window.addEventListener("hashchange", route);
json("/v1/version").then(v => { $("#version").textContent = `${v.project} · ${v.version} · ${v.engine.kind} ${v.engine.version}`; }).catch(() => {});
route();
