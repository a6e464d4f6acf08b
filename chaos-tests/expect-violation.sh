#!/usr/bin/env bash
# Runs baton-chaos and succeeds only if the checker FAILED with violations of
# one of the named invariants: proof that the harness can catch a broken build
# (BATON_WEAKEN) or a broken setup (the asynchronous-replication failover).
#   expect-violation.sh INVARIANT[|INVARIANT...] OUTDIR baton-chaos run ... --out OUTDIR
#
# Exit 0 is a verdict (nothing caught: the test fails), so is exit 1. Any
# other exit is not: 2 when the harness could not bring its cluster up
# (PostgreSQL, a node, the first election, the job definitions), anything
# else if the harness itself died; either way nothing was judged. That is
# said, with the harness's last lines, and the run is tried once more on
# the same seed; a second time fails the test. (CI once saw a weakened run
# end after 23 s with no verdict, its reason not in the summary; the
# summary now prints it.)
set -uo pipefail
invariant=$1; out=$2; shift 2
if [ -n "${BATON_WEAKEN:-}" ]; then what="weakened build (BATON_WEAKEN=$BATON_WEAKEN)"; else what="negative control (${out##*/})"; fi
err=$(mktemp)
trap 'rm -f "$err"' EXIT
for try in 1 2; do
  "$@" > /dev/null 2> "$err"
  rc=$?
  cat "$err" >&2
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || [ "$try" -eq 2 ]; then break; fi
  echo "$what: no verdict (exit $rc), the harness's last lines:"
  tail -n 5 "$err" | sed 's/^/    /'
  echo "$what: trying once more on the same seed"
done
if [ "$rc" -ne 1 ]; then
  echo "expected the checker to fail (exit 1), got exit $rc"
  tail -n 5 "$err" | sed 's/^/    /'
  exit 1
fi
found=0
for inv in ${invariant//|/ }; do
  violations=$(grep -o "\"name\":\"$inv\",\"examined\":[0-9]*,\"violations\":[0-9]*" "$out/report.json" | sed 's/.*"violations"://')
  echo "$what: $inv violations=${violations:-none}"
  if [ -n "$violations" ] && [ "$violations" -gt 0 ]; then
    found=1
    grep -A3 "## Violations: $inv" "$out/report.md" | head -4
  fi
done
if [ "$found" -eq 0 ]; then echo "$what: none of $invariant was violated"; fi
[ "$found" -eq 1 ]
