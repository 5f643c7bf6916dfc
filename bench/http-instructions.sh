#!/usr/bin/env bash
# Instructions per request of HTTP receivers, counted by callgrind: a figure the machine's load does not
# move, for per-step comparisons the wall clock on shared cores cannot resolve (docs/guide/performance.md,
# "Where the instructions go"). From the project root, after `npm run build`:
#
#   bash bench/http-instructions.sh node-http-verify sw-node fastify-verify sw-fastify
#
# Each TARGET is a server of the shared HTTP harness (peers/servers or peers/candidates, without .mjs) or a
# path to a server file that follows its contract. Each runs under valgrind: WARM requests (default 3000),
# counters zeroed, COUNT requests (default 20000), counters dumped; the figure includes V8's helper threads.
# Env: PEERS (default ../shared/bench/http/peers), WARM, COUNT, CONNECTIONS (20), PORT (39200).
# Needs valgrind and the harness's peers installed (`bash ../shared/bench/http/run-peers.sh --quick` once).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PEERS="$(cd "${PEERS:-$root/../shared/bench/http/peers}" && pwd)"
export CANDIDATE_DIST="${CANDIDATE_DIST:-$root/dist}" PORT="${PORT:-39200}"
warm="${WARM:-3000}"; count="${COUNT:-20000}"
[ -d "$PEERS/node_modules" ] || { echo "install the harness's peers first (run-peers.sh --quick)" >&2; exit 2; }
out="$(mktemp -d)"; trap 'rm -rf "$out"' EXIT
for target in "$@"; do
  file="$target"
  for dir in servers candidates; do [ -f "$PEERS/$dir/$target.mjs" ] && file="$PEERS/$dir/$target.mjs"; done
  # A name without slashes: a target may be a path.
  name="$(basename "$target" .mjs)"
  valgrind --tool=callgrind --smc-check=all-non-file --dump-instr=no --callgrind-out-file="$out/$name.%p" \
    node "$file" > "$out/$name.log" 2>&1 &
  server=$!
  # Valgrind starts Node slowly: up to five minutes, then say why not.
  for tries in $(seq 1 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    kill -0 "$server" 2>/dev/null && [ "$tries" -lt 600 ] || { echo "$name did not listen on $PORT:" >&2; cat "$out/$name.log" >&2; exit 1; }
    sleep 0.5
  done
  COUNT="$warm" TAG=wu node "$root/bench/fixed-load.mjs" > /dev/null
  callgrind_control --zero "$server" > /dev/null 2>&1
  COUNT="$count" TAG=ms node "$root/bench/fixed-load.mjs" > /dev/null
  callgrind_control --dump "$server" > /dev/null 2>&1
  kill -TERM "$server"; wait "$server" 2>/dev/null || true
  total=$(awk '/^(summary|totals):/ { print $2; exit }' "$(ls "$out/$name".*.1)")
  printf '%-20s %9d instructions per request (%d requests)\n' "$name" $((total / count)) "$count"
done
