// The dashboard in a real browser: Debian's headless chromium, driven by
// playwright-core. Usage: node dashboard.mjs BASE_URL OUT_DIR
//
// Against a server whose project holds steps.yaml, follow.yaml, grade.yaml
// and long.yaml (tests/integration/dashboard.rs writes them):
// - steps turn green on the run page without a reload; a click shows a log;
// - the running step is selected without a click and its log followed as
//   it grows; a failed step's reason is shown;
// - the DAG of a matrix job at 1280 and 1920 pixels: no two nodes overlap,
//   none leaves its panel, the panel does not overlap the step table, every
//   node's title is its whole id; a matrix group collapses and expands,
//   in the DAG and in the step table;
// - the timeline has a bar per started step in its sandbox's lane, in
//   order of start;
// - Cancel ends a job cancelled; the runs filter hides what does not match.
// Screenshots go to OUT_DIR. Exits non-zero, saying why, on any failure.
import { chromium } from "playwright-core";

const [base, out] = process.argv.slice(2);
if (!base || !out) { console.error("usage: node dashboard.mjs BASE_URL OUT_DIR"); process.exit(2); }
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const LONG = { timeout: 120000 };

function check(ok, what) { if (!ok) throw new Error(what); }

async function start(manifest) {
  const r = await fetch(base + "/v1/runs", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ manifest }),
  });
  if (r.status !== 202) throw new Error(`POST /v1/runs ${manifest}: ${r.status} ${await r.text()}`);
  return (await r.json()).id;
}

async function record(id) { return (await fetch(`${base}/v1/jobs/${id}`)).json(); }

async function open(page, id) {
  await page.evaluate(h => { location.hash = h; }, "#/runs/" + id);
  await page.waitForSelector(`#dag g.node`);
}

async function jobEnds(page, status) {
  await page.waitForFunction(s => document.querySelector("#job-status").textContent.includes(s), status, LONG);
}

// Steps turn green live; a click on a node shows its log.
async function live(page) {
  const id = await start("steps.yaml");
  await page.evaluate(() => { window.__noReload = true; });
  await open(page, id);
  const nodes = await page.$$eval("#dag g.node", ns => ns.map(n => n.dataset.step));
  const first = await page.$$eval("#dag g.node", ns => ns.map(n => n.dataset.status));
  check(!first.every(s => s === "succeeded"), "the job had ended before the page showed it: nothing was seen live");
  await page.waitForFunction(() => {
    const ns = [...document.querySelectorAll("#dag g.node")];
    return ns.length > 0 && ns.every(n => n.dataset.status === "succeeded");
  }, null, LONG);
  await jobEnds(page, "succeeded");
  check(await page.evaluate(() => window.__noReload === true), "the page reloaded");
  await page.click(`#dag g.node[data-step="${nodes[0]}"]`);
  await page.waitForFunction(() => document.querySelector("#log").textContent.includes("step one says hi"), null, LONG);
  const facts = await page.textContent("#detail-facts");
  check(/cpu \d+ ms/.test(facts) && /peak [\d.]+ [KMG]iB/.test(facts), `the step's CPU time and peak memory are not shown: ${facts}`);
  await page.screenshot({ path: `${out}/dashboard-run.png`, fullPage: true });
  return id;
}

// Without a click, the running step is selected and its log grows on the
// page while the step still runs; the step that timed out says so.
async function follows(page, id) {
  await open(page, id);
  const growing = (line) => page.waitForFunction(l => {
    const node = document.querySelector('#dag g.node[data-step="slow@box"]');
    return node?.dataset.status === "running" && document.querySelector("#log").textContent.includes(l);
  }, line, LONG);
  await growing("line 2");
  check(await page.textContent("#detail-title") === "slow@box", "the running step is not the one selected");
  // Lines that arrive after the page showed the first ones.
  const last = Math.max(...[...(await page.textContent("#log")).matchAll(/line (\d+)/g)].map(m => Number(m[1])));
  check(last <= 9, `the page came too late to see the log grow (line ${last} of 12 was there)`);
  await growing(`line ${last + 3}`);
  await page.screenshot({ path: `${out}/dashboard-follow.png`, fullPage: true });
  await jobEnds(page, "failed");
  const reason = await page.textContent('#failures .failure[data-step="broken@box"]');
  check(/timed out after 1s/.test(reason), `the failed step's reason is not shown: ${reason}`);
  check(await page.isVisible('#failures .failure[data-step="broken@box"]'), "the failure is hidden");
}

// Every node's box: inside the DAG panel, overlapping no other node; the
// panel overlapping no step table; every title the whole id.
async function layout(page, width) {
  await page.setViewportSize({ width, height: 1000 });
  await page.waitForFunction(() => {
    const svg = document.querySelector("#dag svg");
    return svg && Number(svg.getAttribute("width")) === document.querySelector("#dag").clientWidth;
  });
  const g = await page.evaluate(() => {
    const box = e => { const r = e.getBoundingClientRect(); return { x: r.x, y: r.y, w: r.width, h: r.height }; };
    return {
      nodes: [...document.querySelectorAll("#dag g.node")].map(n => ({ id: n.dataset.step || n.dataset.group, ...box(n.querySelector("rect")) })),
      titles: [...document.querySelectorAll("#dag g.node[data-step]")].map(n => [n.dataset.step, n.querySelector("title").textContent]),
      dag: box(document.querySelector("#dag")), panel: box(document.querySelector("#dag-panel")), table: box(document.querySelector("#steps")),
      scroll: document.documentElement.scrollWidth,
    };
  });
  const meet = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
  const inside = (a, b) => a.x >= b.x && a.y >= b.y && a.x + a.w <= b.x + b.w && a.y + a.h <= b.y + b.h;
  for (const [i, a] of g.nodes.entries()) {
    check(inside(a, g.dag), `at ${width} px node ${a.id} ${JSON.stringify(a)} is clipped by its panel ${JSON.stringify(g.dag)}`);
    for (const b of g.nodes.slice(i + 1)) check(!meet(a, b), `at ${width} px nodes ${a.id} and ${b.id} overlap`);
  }
  check(!meet(g.panel, g.table), `at ${width} px the DAG panel overlaps the step table`);
  check(g.scroll <= width, `at ${width} px the page scrolls sideways (${g.scroll} px)`);
  for (const [id, title] of g.titles) check(title === id, `node ${id} has the title ${title}`);
  return g.nodes.length;
}

// The timeline: a bar per started step, in its sandbox's lane, by start.
async function timeline(page, rec) {
  const bars = await page.$$eval("#timeline rect.bar", bs => bs.map(b => {
    const r = b.getBoundingClientRect();
    return { step: b.dataset.step, lane: b.closest("g.lane").dataset.sandbox, start: Number(b.dataset.start), x: r.x, y: r.y, h: r.height };
  }));
  const started = rec.steps.filter(s => s.status !== "skipped" && s.status !== "pending");
  check(bars.length === started.length, `${bars.length} bars for ${started.length} started steps`);
  const lanes = new Map();
  for (const s of started) {
    const bar = bars.find(b => b.step === s.id);
    check(bar, `step ${s.id} has no bar`);
    check(bar.lane === s.sandbox, `step ${s.id} is in lane ${bar.lane}, not ${s.sandbox}`);
    lanes.set(s.sandbox, (lanes.get(s.sandbox) || []).concat(bar));
  }
  const spans = [];
  for (const [sb, list] of lanes) {
    list.sort((a, b) => a.start - b.start);
    list.forEach((b, i) => check(i === 0 || b.x >= list[i - 1].x, `in lane ${sb}, ${b.step} is drawn before an earlier step`));
    spans.push({ sb, top: Math.min(...list.map(b => b.y)), bottom: Math.max(...list.map(b => b.y + b.h)) });
  }
  for (const [i, a] of spans.entries()) for (const b of spans.slice(i + 1)) {
    check(a.bottom <= b.top || b.bottom <= a.top, `lanes ${a.sb} and ${b.sb} overlap`);
  }
}

// The matrix job: layout at both widths, a group collapsed and expanded, the timeline.
async function matrix(page, id) {
  await open(page, id);
  await jobEnds(page, "succeeded");
  const rec = await record(id);
  for (const width of [1280, 1920]) {
    const n = await layout(page, width);
    check(n === rec.steps.length, `${n} nodes for ${rec.steps.length} steps`);
    await page.screenshot({ path: `${out}/dashboard-${width}.png`, fullPage: true });
  }
  const group = "run_the_unit_tests@grader";
  const members = `#dag g.node[data-step^="${group}["]`;
  check((await page.$$(members)).length === 6, "the group does not show its 6 instances");
  await page.click(`#dag g.group-head[data-group="${group}"]`);
  await page.waitForSelector(`#dag g.node.group[data-group="${group}"]`);
  check((await page.$$(members)).length === 0, "the collapsed group still shows its instances");
  const collapsed = await layout(page, 1280);
  check(collapsed === rec.steps.length - 5, `${collapsed} nodes once a group of 6 is one`);
  await page.click(`#dag g.node.group[data-group="${group}"]`);
  await page.waitForFunction(s => document.querySelectorAll(s).length === 6, members);
  // The step table folds the group's rows away and back.
  const rows = `#steps tr[data-step^="${group}["]`;
  await page.click(`#steps [data-fold="${group}"]`);
  await page.waitForFunction(s => document.querySelectorAll(s).length === 0, rows);
  await page.click(`#steps [data-fold="${group}"]`);
  await page.waitForFunction(s => document.querySelectorAll(s).length === 6, rows);
  await timeline(page, rec);
  // An artifact downloads from its URL.
  const [file] = await Promise.all([page.waitForEvent("download"), page.click('#artifacts a[title="results/alice.txt"]')]);
  check(file.suggestedFilename() === "alice.txt", `the artifact downloads as ${file.suggestedFilename()}`);
}

async function cancels(page) {
  const long = await start("long.yaml");
  await page.evaluate(h => { location.hash = h; }, "#/runs/" + long);
  await page.waitForSelector('#dag g.node[data-status="running"]', LONG);
  await page.click("#cancel");
  await jobEnds(page, "cancelled");
  const cancelled = await page.$eval("#dag g.node", n => n.dataset.status);
  check(cancelled === "cancelled", "the long step shows " + cancelled);
  await page.screenshot({ path: `${out}/dashboard-cancelled.png`, fullPage: true });
  return long;
}

// The runs list: a name or a status hides the rows that do not match.
async function filters(page, failedId) {
  await page.evaluate(() => { location.hash = "#/"; });
  await page.waitForSelector(`tr[data-run="${failedId}"]`);
  const shown = () => page.$$eval("#runs tbody tr[data-run]", rs => rs.filter(r => r.offsetParent !== null).map(r => [r.dataset.run, r.dataset.status]));
  const all = await shown();
  await page.fill("#filter-name", "grade");
  let rows = await shown();
  check(rows.length > 0 && rows.length < all.length && rows.every(([id]) => id.includes("grade")), `filtering by name shows ${JSON.stringify(rows)}`);
  await page.fill("#filter-name", "");
  await page.selectOption("#filter-status", "failed");
  rows = await shown();
  check(rows.length === 1 && rows[0][0] === failedId, `filtering by status shows ${JSON.stringify(rows)}`);
  await page.selectOption("#filter-status", "");
  check((await shown()).length === all.length, "clearing the filter does not show every run");
}

const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
let failed = false;
let page;
try {
  page = await browser.newPage({ viewport: { width: 1366, height: 800 } });
  page.on("pageerror", e => { console.error("page error:", e.message); failed = true; });
  page.on("console", m => { if (m.type() === "error") { console.error("console error:", m.text()); failed = true; } });
  await page.goto(base + "/");
  await page.waitForSelector("#runs");

  const run = await live(page);
  const follow = await start("follow.yaml");
  const grade = await start("grade.yaml");
  await follows(page, follow);
  await matrix(page, grade);
  const long = await cancels(page);
  await filters(page, follow);
  await page.evaluate(() => { location.hash = "#/sandboxes"; });
  await page.waitForSelector("#sandboxes");
  console.log(JSON.stringify({ ok: !failed, run, follow, grade, cancelled: long }));
} catch (e) {
  console.error("dashboard test failed:", e.message);
  failed = true;
  if (page) {
    await page.screenshot({ path: `${out}/dashboard-failure.png`, fullPage: true }).catch(() => {});
    console.error("page text:", await page.evaluate(() => document.body.innerText).catch(() => "?"));
  }
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
