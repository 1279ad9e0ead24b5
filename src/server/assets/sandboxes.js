// The sandboxes page: the project's sandboxes and each one's `info`.
import { $, $$, esc, enc, json, badge } from "./api.js";

export async function sandboxesPage() {
  const { sandboxes } = await json("/v1/sandboxes");
  $("#main").innerHTML = `<table id="sandboxes"><thead><tr><th>name</th><th>state</th><th>image</th><th>profile</th><th>persist</th><th></th></tr></thead><tbody>
    ${sandboxes.map(s => `<tr><td>${esc(s.name)}</td><td>${badge(s.state)}</td><td>${esc(s.image)}</td><td>${esc(s.profile)}</td>
      <td>${s.persist ? "yes" : ""}</td><td><button data-info="${esc(s.name)}">info</button></td></tr>`).join("") ||
      `<tr><td colspan="6" class="muted">No sandboxes in this project.</td></tr>`}</tbody></table>
    <div class="card spaced"><b id="info-title">Info</b><pre id="info"></pre></div>`;
  $$("[data-info]").forEach(b => b.onclick = async () => {
    $("#info-title").textContent = "Info: " + b.dataset.info;
    try { $("#info").textContent = JSON.stringify(await json(`/v1/sandboxes/${enc(b.dataset.info)}`), null, 2); }
    catch (err) { $("#info").textContent = err.message; }
  });
}
