// Drives the chat page (/chat/ of examples/quickstart) in headless Chromium
// through playwright-core: send, token-by-token streaming, a second message,
// reload, Stop, a failing run, switching threads, an interrupt (/ask)
// answered from the page; then the same page on protocol v2
// (?protocol=v2, ?protocol=v2-websocket). Needs a Chromium
// binary (CHROMIUM_PATH, default /usr/bin/chromium): .ci/run installs
// Debian's; without one the tests are skipped with a message. On failure a
// screenshot is saved to a temp folder (its path is printed).
import { test, before, after, afterEach } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium } from "playwright-core";

const repoRoot = resolve(import.meta.dirname, "..", "..", "..");
const chromiumPath = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const haveBrowser = existsSync(chromiumPath);
const skip = haveBrowser ? false : `no Chromium at ${chromiumPath} (install Debian's chromium, or set CHROMIUM_PATH)`;
if (skip) console.log(`# SKIP browser tests: ${skip}`);

// tokenDelay paces the chat graph's words so that streaming and Stop are
// observable; the long reply takes about longWords * tokenDelay.
const tokenDelay = 40;
const longWords = 150;

let server, browser, page, shots;
const consoleErrors = []; // the page's console errors, shown when a test fails

// startQuickstart builds (unless GRAPHSERVER_QUICKSTART_BIN names a binary)
// and starts the quickstart on a free port with a fresh database.
async function startQuickstart() {
  let bin = process.env.GRAPHSERVER_QUICKSTART_BIN;
  if (!bin || !existsSync(bin)) {
    bin = join(mkdtempSync(join(tmpdir(), "gs-bin-")), "quickstart");
    execFileSync("go", ["build", "-o", bin, "./examples/quickstart"], { cwd: repoRoot, stdio: "inherit" });
  }
  const dir = mkdtempSync(join(tmpdir(), "gs-chat-"));
  const child = spawn(bin, ["-addr", "127.0.0.1:0", "-db", join(dir, "gs.db"), "-token-delay", `${tokenDelay}ms`, "-log-level", "warn"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stderr.on("data", (d) => { log += d; });
  const url = await new Promise((ok, fail) => {
    let out = "";
    const timer = setTimeout(() => fail(new Error(`quickstart did not start:\n${out}\n${log}`)), 30000);
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) { clearTimeout(timer); ok(m[1]); }
    });
    child.on("exit", (code) => { clearTimeout(timer); fail(new Error(`quickstart exited ${code}:\n${out}\n${log}`)); });
  });
  child.removeAllListeners("exit");
  return {
    url,
    log: () => log,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((ok) => child.on("exit", ok));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

// api calls the server directly (to check what the page shows against it).
async function api(path) {
  const res = await fetch(server.url + path);
  assert.equal(res.status, 200, `GET ${path}`);
  return res.json();
}

before(async () => {
  if (skip) return;
  server = await startQuickstart();
  // A fresh profile (--user-data-dir), headless, no sandbox (root in CI),
  // and nothing that reaches out to the network at start.
  browser = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "gs-chromium-")), {
    executablePath: chromiumPath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  page = browser.pages()[0] ?? (await browser.newPage());
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
  shots = mkdtempSync(join(tmpdir(), "gs-chat-shots-"));
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

afterEach(async (t) => {
  // A failed test leaves a screenshot behind.
  if (page && t.passed === false) {
    const file = join(shots, t.name.replace(/\W+/g, "_") + ".png");
    await page.screenshot({ path: file, fullPage: true }).catch(() => {});
    console.log(`# screenshot of the failed test "${t.name}": ${file}`);
    console.log(`# page console errors:\n${consoleErrors.join("\n")}\n# server log:\n${server?.log()}`);
  }
});

const messages = () => page.locator("[data-testid=message]");
const texts = async () => messages().allTextContents();
const threadParam = () => new URL(page.url()).searchParams.get("thread");

// send types a message and clicks Send.
async function send(content) {
  await page.getByTestId("input").fill(content);
  await page.getByTestId("send").click();
}

// idle waits until no reply is streaming.
async function idle() {
  await page.waitForSelector("[data-testid=status]:text-is('idle')");
}

// recordAIText records every text the last AI message shows (window.__seen).
async function recordAIText() {
  await page.evaluate(() => {
    window.__seen = [];
    const observer = new MutationObserver(() => {
      const ai = [...document.querySelectorAll("[data-testid=message][data-type=ai]")].at(-1);
      const t = ai?.textContent ?? "";
      if (t && window.__seen.at(-1) !== t) window.__seen.push(t);
    });
    observer.observe(document.body, { subtree: true, childList: true, characterData: true });
  });
}

const first = "hello from the browser, one two three four five six";

test("send streams the reply token by token", { skip }, async () => {
  await page.goto(server.url + "/chat/");
  await idle();
  assert.equal(await messages().count(), 0);
  await recordAIText();
  await send(first);
  await page.waitForFunction((n) => document.querySelectorAll("[data-testid=message]").length === n, 2);
  await idle();
  assert.deepEqual(await texts(), [first, "You said: " + first]);
  const seen = await page.evaluate(() => window.__seen);
  // The reply grew word by word: several partial texts, each a prefix of the next.
  assert.ok(seen.length >= 5, `partial replies seen: ${JSON.stringify(seen)}`);
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i].startsWith(seen[i - 1]), JSON.stringify(seen));
  assert.equal(seen.at(-1), "You said: " + first);
  assert.match(threadParam() ?? "", /^[0-9a-f-]{36}$/);
});

test("a second message goes to the same thread", { skip }, async () => {
  const thread = threadParam();
  await send("and a second one");
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=message]").length === 4);
  await idle();
  assert.deepEqual(await texts(), [first, "You said: " + first, "and a second one", "You said: and a second one"]);
  assert.equal(threadParam(), thread);
  const state = await api(`/threads/${thread}/state`);
  assert.equal(state.values.messages.length, 4);
});

test("a reload keeps the history", { skip }, async () => {
  const before = await texts();
  await page.reload();
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=message]").length === 4);
  assert.deepEqual(await texts(), before);
});

test("Stop ends the reply mid-stream, and it stays stopped after a reload", { skip }, async () => {
  const thread = threadParam();
  const long = Array.from({ length: longWords }, (_, i) => `w${i}`).join(" ");
  const full = "You said: " + long;
  await send(long);
  // Stop once a few words streamed.
  await page.waitForFunction(() => {
    const ai = [...document.querySelectorAll("[data-testid=message][data-type=ai]")].at(-1);
    return ai && /w3\b/.test(ai.textContent);
  });
  await page.getByTestId("stop").click();
  await idle();
  const shown = (await texts()).at(-1);
  assert.ok(shown.startsWith("You said: w0") && shown.length < full.length, `stopped reply: ${shown}`);

  // The run was cancelled on the server...
  let runs;
  for (let i = 0; i < 200; i++) {
    runs = await api(`/threads/${thread}/runs`);
    if (runs[0].status !== "running" && runs[0].status !== "pending") break;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.equal(runs[0].status, "interrupted");

  // ...so after a reload (and after the time the full reply needed) the
  // reply is not there: the thread holds the question, not the full answer.
  await page.reload();
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=message]").length >= 5);
  await idle();
  const after = await texts();
  assert.equal(after[4], long);
  assert.ok(!after.includes(full), "the full reply never appears");
  const state = await api(`/threads/${thread}/state`);
  const contents = state.values.messages.map((m) => m.content);
  assert.equal(contents[4], long);
  assert.ok(!contents.includes(full), "the thread state does not hold the full reply");
  assert.deepEqual(after, contents, "the page shows the thread's state");
  const history = await api(`/threads/${thread}/history`);
  assert.deepEqual(history[0].values.messages.map((m) => m.content), contents, "history agrees with the state");
});

test("a failing run shows its error", { skip }, async () => {
  await send("/fail");
  const error = page.getByTestId("error");
  await error.waitFor();
  assert.match(await error.textContent(), /failed, as asked/);
  await idle();
});

test("the thread list switches threads", { skip }, async () => {
  const firstThread = threadParam();
  await page.getByTestId("new-thread").click();
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=message]").length === 0);
  assert.equal(threadParam(), null);
  await send("a brand new thread");
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=message]").length === 2);
  await idle();
  const secondThread = threadParam();
  assert.ok(secondThread && secondThread !== firstThread);

  // Both threads are listed, newest first; clicking one shows its messages.
  const listed = page.getByTestId("thread");
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=thread]").length >= 2);
  assert.equal(await listed.first().getAttribute("data-thread-id"), secondThread);
  await page.locator(`[data-testid=thread][data-thread-id="${firstThread}"]`).click();
  await page.waitForFunction((id) => document.querySelector("[data-testid=messages]").dataset.threadId === id, firstThread);
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=message]").length >= 4);
  assert.equal((await texts())[0], first);
  assert.equal(threadParam(), firstThread);

  await page.locator(`[data-testid=thread][data-thread-id="${secondThread}"]`).click();
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=message]").length === 2);
  assert.deepEqual(await texts(), ["a brand new thread", "You said: a brand new thread"]);
});

test("an interrupt's question is answered from the page", { skip }, async () => {
  await page.getByTestId("new-thread").click();
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=message]").length === 0);
  await askAndAnswer("legacy answer");
});

// askAndAnswer sends /ask on a new thread (the quickstart's chat graph
// interrupts with a question), answers it from the page and checks the
// reply and the thread's state.
async function askAndAnswer(answer) {
  await send("/ask");
  const question = page.getByTestId("interrupt");
  await question.waitFor();
  assert.equal(await question.textContent(), "What should I say?");
  const thread = threadParam();
  assert.equal((await api(`/threads/${thread}`)).status, "interrupted");
  await page.getByTestId("answer").fill(answer);
  await page.getByTestId("respond").click();
  await page.waitForFunction((a) => [...document.querySelectorAll("[data-testid=message]")].some((m) => m.textContent === `You answered: ${a}`), answer);
  await idle();
  assert.deepEqual(await texts(), ["/ask", `You answered: ${answer}`]);
  assert.equal(await page.getByTestId("interrupt").count(), 0, "the question is gone");
  const state = await api(`/threads/${thread}/state`);
  assert.deepEqual(state.values.messages.map((m) => m.content), ["/ask", `You answered: ${answer}`]);
  assert.deepEqual(state.next, []);
}

// Protocol v2: the same page on @langchain/react's useStream
// (?protocol=v2: commands on /threads/{id}/commands, events as SSE from
// /threads/{id}/stream/events; ?protocol=v2-websocket: events over a
// WebSocket).
for (const protocol of ["v2", "v2-websocket"]) {
  test(`${protocol}: send streams the reply token by token, and a reload keeps the history`, { skip }, async (t) => {
    // What the page asks of the server: protocol-v2 commands, events over
    // SSE or a WebSocket, no legacy run streams.
    const asked = [];
    const onRequest = (r) => asked.push(`${r.method()} ${new URL(r.url()).pathname.replace(/[0-9a-f-]{36}/g, "{id}")}`);
    const sockets = [];
    const onSocket = (ws) => {
      sockets.push(new URL(ws.url()).pathname.replace(/[0-9a-f-]{36}/g, "{id}"));
      ws.on("framesent", (f) => { try { asked.push(`WS ${JSON.parse(f.payload).method}`); } catch {} });
    };
    page.on("request", onRequest);
    page.on("websocket", onSocket);
    t.after(() => { page.off("request", onRequest); page.off("websocket", onSocket); });
    await page.goto(`${server.url}/chat/?protocol=${protocol}`);
    await idle();
    assert.equal(await page.getByTestId("protocol").textContent(), protocol);
    assert.equal(await messages().count(), 0);
    await recordAIText();
    await send(first);
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=message]").length === 2);
    await page.waitForFunction((t) => [...document.querySelectorAll("[data-testid=message][data-type=ai]")].at(-1)?.textContent === t, "You said: " + first);
    await idle();
    assert.deepEqual(await texts(), [first, "You said: " + first]);
    const seen = await page.evaluate(() => window.__seen);
    assert.ok(seen.length >= 5, `partial replies seen: ${JSON.stringify(seen)}`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].startsWith(seen[i - 1]), JSON.stringify(seen));
    const thread = threadParam();
    assert.match(thread ?? "", /^[0-9a-f-]{36}$/);

    // A second message goes to the same thread; the page shows its state.
    await send("and a second one");
    await page.waitForFunction(() => [...document.querySelectorAll("[data-testid=message]")].at(-1)?.textContent === "You said: and a second one");
    await idle();
    assert.equal(threadParam(), thread);
    const state = await api(`/threads/${thread}/state`);
    assert.deepEqual(await texts(), state.values.messages.map((m) => m.content));
    assert.equal(state.values.messages.length, 4);
    const runs = await api(`/threads/${thread}/runs`);
    assert.deepEqual(runs.map((r) => r.status), ["success", "success"], "two ordinary runs");
    assert.ok(!asked.some((a) => a.includes("/runs/stream") || a.endsWith("/stream")), asked.join("\n"));
    if (protocol === "v2") {
      assert.ok(asked.includes("POST /threads/{id}/commands"), asked.join("\n"));
      assert.ok(asked.includes("POST /threads/{id}/stream/events"), asked.join("\n"));
    } else {
      assert.ok(sockets.includes("/threads/{id}/stream/events"), `sockets: ${sockets}`);
      assert.ok(asked.includes("WS run.start") || asked.includes("POST /threads/{id}/commands"), asked.join("\n"));
      assert.ok(asked.includes("WS subscription.subscribe"), asked.join("\n"));
    }

    await page.reload();
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=message]").length === 4);
    assert.deepEqual(await texts(), state.values.messages.map((m) => m.content));
  });

  test(`${protocol}: an interrupt's question is answered from the page (input.respond)`, { skip }, async () => {
    await page.getByTestId("new-thread").click();
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=message]").length === 0);
    await askAndAnswer(`${protocol} answer`);
  });

  test(`${protocol}: a failing run shows its error`, { skip }, async () => {
    await send("/fail");
    const error = page.getByTestId("error");
    await error.waitFor();
    assert.match(await error.textContent(), /failed, as asked/);
    await idle();
  });

  test(`${protocol}: Stop cancels the run started by run.start`, { skip }, async () => {
    await page.getByTestId("new-thread").click();
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=message]").length === 0);
    const long = Array.from({ length: longWords }, (_, i) => `w${i}`).join(" ");
    await send(long);
    await page.waitForFunction(() => {
      const ai = [...document.querySelectorAll("[data-testid=message][data-type=ai]")].at(-1);
      return ai && /w3\b/.test(ai.textContent);
    });
    await page.getByTestId("stop").click();
    await idle();
    const thread = threadParam();
    let runs;
    for (let i = 0; i < 200; i++) {
      runs = await api(`/threads/${thread}/runs`);
      if (runs[0].status !== "running" && runs[0].status !== "pending") break;
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.equal(runs[0].status, "interrupted");
    const state = await api(`/threads/${thread}/state`);
    assert.deepEqual(state.values.messages.map((m) => m.content), [long], "no reply kept");
  });
}

test("the API reference renders at /docs", { skip }, async () => {
  await page.goto(server.url + "/docs");
  await page.waitForSelector("body[data-ready=true]");
  const spec = await api("/openapi.json");
  const ops = Object.values(spec.paths).reduce((n, item) => n + Object.keys(item).length, 0);
  assert.equal(await page.locator("details.op").count(), ops);
  await page.getByPlaceholder(/Filter operations/).fill("runs wait");
  const visible = await page.locator("details.op:not(.hidden)").count();
  assert.ok(visible >= 2 && visible < ops, `filtered to ${visible}`);
});
