// The dashboard in a real browser: Debian's headless chromium, driven by
// playwright-core. Usage: node dashboard.mjs BASE_URL OUT_DIR
//
// Opens the dashboard, starts a job through the API, watches its steps turn
// green on the run page without a reload, then starts a long job and
// cancels it with the Cancel button. Screenshots go to OUT_DIR. Exits
// non-zero, saying why, on any failure.
import { chromium } from "playwright-core";

const [base, out] = process.argv.slice(2);
if (!base || !out) { console.error("usage: node dashboard.mjs BASE_URL OUT_DIR"); process.exit(2); }
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";

async function start(manifest) {
  const r = await fetch(base + "/v1/runs", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ manifest }),
  });
  if (r.status !== 202) throw new Error(`POST /v1/runs ${manifest}: ${r.status} ${await r.text()}`);
  return (await r.json()).id;
}

const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
let failed = false;
let page;
try {
  page = await browser.newPage({ viewport: { width: 1366, height: 800 } });
  page.on("pageerror", e => { console.error("page error:", e.message); failed = true; });
  await page.goto(base + "/");
  await page.waitForSelector("#runs");

  // A job started from the API, watched live.
  const id = await start("steps.yaml");
  await page.evaluate(() => { window.__noReload = true; });
  await page.evaluate(h => { location.hash = h; }, "#/runs/" + id);
  await page.waitForSelector("#dag g.node");
  const nodes = await page.$$eval("#dag g.node", ns => ns.map(n => n.dataset.step));
  const first = await page.$$eval("#dag g.node", ns => ns.map(n => n.dataset.status));
  if (first.every(s => s === "succeeded")) throw new Error("the job had ended before the page showed it: nothing was seen live");
  await page.waitForFunction(() => {
    const ns = [...document.querySelectorAll("#dag g.node")];
    return ns.length > 0 && ns.every(n => n.dataset.status === "succeeded");
  }, null, { timeout: 120000 });
  await page.waitForFunction(() => document.querySelector("#job-status").textContent.includes("succeeded"), null, { timeout: 30000 });
  if (!(await page.evaluate(() => window.__noReload === true))) throw new Error("the page reloaded");
  // The log of a step, by clicking its node.
  await page.click(`#dag g.node[data-step="${nodes[0]}"]`);
  await page.waitForFunction(() => document.querySelector("#log").textContent.includes("step one says hi"), null, { timeout: 30000 });
  await page.screenshot({ path: `${out}/dashboard-run.png`, fullPage: true });

  // A long job, cancelled with the button.
  const long = await start("long.yaml");
  await page.evaluate(h => { location.hash = h; }, "#/runs/" + long);
  await page.waitForSelector('#dag g.node[data-status="running"]', { timeout: 120000 });
  await page.click("#cancel");
  await page.waitForFunction(() => document.querySelector("#job-status").textContent.includes("cancelled"), null, { timeout: 60000 });
  const cancelled = await page.$eval("#dag g.node", n => n.dataset.status);
  if (cancelled !== "cancelled") throw new Error("the long step shows " + cancelled);
  await page.screenshot({ path: `${out}/dashboard-cancelled.png`, fullPage: true });

  // The runs list shows both, and the sandboxes page answers.
  await page.evaluate(() => { location.hash = "#/"; });
  await page.waitForSelector(`tr[data-run="${id}"]`);
  await page.evaluate(() => { location.hash = "#/sandboxes"; });
  await page.waitForSelector("#sandboxes");
  console.log(JSON.stringify({ ok: !failed, run: id, cancelled: long, first }));
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
