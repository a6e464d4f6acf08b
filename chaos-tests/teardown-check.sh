#!/usr/bin/env bash
# A harness that aborts with its cluster up leaves nothing running
# (harness_teardown.cpp): BATON_CHAOS_ABORT_FOR_TEST=1 makes baton-chaos
# abort once its nodes, workers and PostgreSQL run; then no process of its
# work directory and no PostgreSQL of its own may be left.
#   teardown-check.sh BATON_CHAOS OUTDIR
set -uo pipefail
chaos=$1; out=$2
rm -rf "$out"
err=$(BATON_CHAOS_ABORT_FOR_TEST=1 "$chaos" run --seed 3 --duration 30s --nodes 2 --workers 1 --faults none \
        --out "$out" 2>&1 >/dev/null)
rc=$?
pg=$(echo "$err" | grep -o "postgresql://[^ ]*" | head -1)
port=$(echo "$pg" | sed -E 's|.*:([0-9]+)/.*|\1|')
here=$(cd "$(dirname "$0")/.." && pwd)
# A failed check leaves nothing either: what the harness left is stopped here.
cleanup() {
  local left pm data
  left=$(pgrep -f "$out/work" | tr '\n' ' ')
  [ -n "$left" ] && kill -9 $left 2>/dev/null
  for pm in $(pgrep -f "postgres -D /tmp/baton-chaos-pg-[^ ]*/pg/data -p ${port:-none}( |$)"); do
    data=$(tr '\0' ' ' </proc/"$pm"/cmdline | sed -E 's/.* -D ([^ ]+)\/data .*/\1/')
    "$here/scripts/pg-private" stop "$data" >/dev/null 2>&1
    rmdir "$(dirname "$data")" 2>/dev/null
  done
}
fail() { echo "teardown-check: $*"; echo "$err" | tail -n 20 | sed 's/^/    /'; cleanup; exit 1; }
[ "$rc" -eq 134 ] || fail "expected the harness to abort (exit 134), got exit $rc"
echo "$err" | grep -q "baton-chaos: died of signal Aborted; stopping its cluster" || fail "no word of the abort on stderr"
sleep 1
left=$(pgrep -f "$out/work" | tr '\n' ' ')
[ -z "$left" ] || fail "left running: $left"
if [ -n "$port" ] && pg_isready -q -h 127.0.0.1 -p "$port" -t 1; then fail "its PostgreSQL still answers on port $port"; fi
[ -n "$port" ] || fail "no database URL in the harness's log"
pgrep -f "postgres -D .* -p $port( |$)" >/dev/null && fail "its postmaster (port $port) still runs"
echo "teardown-check: the aborted harness stopped its nodes, workers and PostgreSQL"
