// Starts examples/reference (or examples/agents) on a free port with a fresh
// SQLite file and hands tests an official SDK client pointed at it. Each test file gets its own
// server, so files are isolated from each other.
import { spawn, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@langchain/langgraph-sdk";

const repoRoot = resolve(import.meta.dirname, "..", "..");

// binary returns the binary of examples/<program>, building it once per
// process unless GRAPHSERVER_<PROGRAM>_BIN names a prebuilt one (as .ci/run
// does for the reference server).
function binary(program) {
  const env = `GRAPHSERVER_${program.toUpperCase()}_BIN`;
  const given = process.env[env];
  if (given && existsSync(given)) return given;
  const out = join(mkdtempSync(join(tmpdir(), "gs-bin-")), program);
  execFileSync("go", ["build", "-o", out, `./examples/${program}`], { cwd: repoRoot, stdio: "inherit" });
  process.env[env] = out;
  return out;
}

// startServer launches the reference server (with extra flags, if any) and
// resolves once it prints its address.
export async function startServer(...flags) {
  return startProgram("reference", ...flags);
}

// startAgentsServer launches examples/agents (the ported LangGraph agents).
export async function startAgentsServer(...flags) {
  return startProgram("agents", ...flags);
}

// startIntegrationServer launches examples/integration (the Python SDK's
// integration graphs: agent, tools_agent, deep_agent, factory_agent).
export async function startIntegrationServer(...flags) {
  return startProgram("integration", ...flags);
}

// GRAPHSERVER_E2E_POSTGRES_URL runs the suite on PostgreSQL: each server
// gets a database of its own on that server, dropped when it stops.
const pgBase = process.env.GRAPHSERVER_E2E_POSTGRES_URL;

function psql(sql) {
  execFileSync("psql", [pgBase, "-qAtc", sql], { stdio: ["ignore", "pipe", "pipe"] });
}

async function startProgram(program, ...flags) {
  const dir = mkdtempSync(join(tmpdir(), "gs-e2e-"));
  let db = join(dir, "gs.db");
  let pgName = null;
  if (pgBase) {
    pgName = `gs_e2e_${randomBytes(6).toString("hex")}`;
    psql(`CREATE DATABASE ${pgName}`);
    const url = new URL(pgBase);
    url.pathname = `/${pgName}`;
    db = url.toString();
  }
  const dropDB = () => { if (pgName) { psql(`DROP DATABASE IF EXISTS ${pgName} WITH (FORCE)`); pgName = null; } };
  const child = spawn(binary(program), ["-addr", "127.0.0.1:0", "-db", db, ...flags], {
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
    // kill ends the server at once with SIGKILL, as a crash would: no
    // shutdown, its runs keep their leases.
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((ok) => child.on("exit", ok));
      child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) { dropDB(); return; }
      const exited = new Promise((ok) => child.on("exit", ok));
      child.kill("SIGTERM");
      await exited;
      dropDB();
    },
  };
}

// collect drains an SDK stream into an array of {event, data, id?} chunks.
export async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}
