// Builds the chat page into dist/ (committed, embedded in the quickstart by
// chatui.go): dist/app.js (src/main.jsx bundled and minified by esbuild),
// dist/index.html (copied) and dist/sources.sha256 (a digest of what the
// bundle is built from, which the Go test TestBundleUpToDate checks without
// node).
//
//   node build.mjs           # rebuild dist/
//   node build.mjs --check   # fail if dist/ differs from a fresh build
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, readdirSync, writeFileSync, copyFileSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const here = import.meta.dirname;

// sourcesDigest hashes the inputs of the bundle: src/*, package.json,
// package-lock.json and build.mjs ("<path>\0<sha256 of file>\n", sorted).
// chatui_test.go computes the same digest.
export function sourcesDigest(dir) {
  const files = ["build.mjs", "package.json", "package-lock.json", ...readdirSync(join(dir, "src")).map((f) => "src/" + f)].sort();
  const h = createHash("sha256");
  for (const f of files) {
    h.update(f + "\0" + createHash("sha256").update(readFileSync(join(dir, f))).digest("hex") + "\n");
  }
  return h.digest("hex");
}

async function buildInto(out) {
  mkdirSync(out, { recursive: true });
  await build({
    entryPoints: [join(here, "src/main.jsx")],
    outfile: join(out, "app.js"),
    bundle: true,
    minify: true,
    format: "esm",
    target: "es2020",
    jsx: "automatic",
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "warning",
  });
  copyFileSync(join(here, "src/index.html"), join(out, "index.html"));
  writeFileSync(join(out, "sources.sha256"), sourcesDigest(here) + "\n");
}

if (process.argv.includes("--check")) {
  const tmp = mkdtempSync(join(tmpdir(), "chat-ui-"));
  try {
    await buildInto(tmp);
    const stale = ["app.js", "index.html", "sources.sha256"].filter(
      (f) => !readFileSync(join(tmp, f)).equals(readFileSync(join(here, "dist", f))),
    );
    if (stale.length) {
      console.error(`examples/chat-ui/dist is stale (${stale.join(", ")}): run npm run build in examples/chat-ui and commit dist/`);
      process.exit(1);
    }
    console.log("examples/chat-ui/dist is up to date");
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
} else {
  await buildInto(join(here, "dist"));
}
