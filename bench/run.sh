#!/usr/bin/env bash
# Measures graphserver and the official LangGraph JS dev server in the same
# run, on the same machine: starts `langgraphjs dev` (@langchain/langgraph-cli,
# pinned in package.json) with the loadtest's graphs (graph.mjs) on a free
# loopback port, then runs examples/loadtest against both (-js), which prints
# one table with their ratios. Arguments go to the loadtest, e.g.
#
#   bench/run.sh -repeat 3 -n 5000
#   bench/run.sh -only threads
set -euo pipefail
cd "$(dirname "$0")"
# npm install --no-save, not npm ci: the lock lacks the other platforms'
# optional tailwind binaries (langgraph-ui's), which npm ci insists on.
[ -d node_modules ] || npm install --no-save --no-audit --no-fund </dev/null >&2
bin="$(mktemp -d)"
log="$bin/langgraphjs.log"
go build -o "$bin/loadtest" ../examples/loadtest
port="$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
# Its own process group, so that the dev server and its workers stop with it.
setsid npx --no-install langgraphjs dev --port "$port" --host 127.0.0.1 --no-browser >"$log" 2>&1 </dev/null &
pgid=$!
trap 'kill -- "-$pgid" 2>/dev/null || true; rm -rf "$bin"' EXIT
if ! "$bin/loadtest" -js "http://127.0.0.1:$port" "$@"; then
  echo "--- langgraphjs dev log:" >&2
  tail -n 40 "$log" >&2
  exit 1
fi
