// Starts examples/reference on a free port with a fresh SQLite file and hands
// tests an official SDK client pointed at it. Each test file gets its own
// server, so files are isolated from each other.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@langchain/langgraph-sdk";

const repoRoot = resolve(import.meta.dirname, "..", "..");

// binary returns the reference server binary, building it once per process
// unless GRAPHSERVER_REFERENCE_BIN names a prebuilt one (as .ci/run does).
function binary() {
  const given = process.env.GRAPHSERVER_REFERENCE_BIN;
  if (given && existsSync(given)) return given;
  const out = join(mkdtempSync(join(tmpdir(), "gs-bin-")), "reference");
  execFileSync("go", ["build", "-o", out, "./examples/reference"], { cwd: repoRoot, stdio: "inherit" });
  process.env.GRAPHSERVER_REFERENCE_BIN = out;
  return out;
}

// startServer launches the server (with extra flags, if any) and resolves
// once it prints its address.
export async function startServer(...flags) {
  const dir = mkdtempSync(join(tmpdir(), "gs-e2e-"));
  const child = spawn(binary(), ["-addr", "127.0.0.1:0", "-db", join(dir, "gs.db"), ...flags], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stderr.on("data", (d) => { log += d; });
  const url = await new Promise((ok, fail) => {
    let out = "";
    const timer = setTimeout(() => fail(new Error(`server did not start:\n${out}\n${log}`)), 30000);
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) { clearTimeout(timer); ok(m[1]); }
    });
    child.on("exit", (code) => { clearTimeout(timer); fail(new Error(`server exited ${code}:\n${out}\n${log}`)); });
  });
  child.removeAllListeners("exit");
  const client = new Client({ apiUrl: url, apiKey: null });
  return {
    url,
    client,
    log: () => log,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((ok) => child.on("exit", ok));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

// collect drains an SDK stream into an array of {event, data, id?} chunks.
export async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}
