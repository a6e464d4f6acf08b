#!/usr/bin/env bash
# Runs baton-chaos and succeeds only if the checker FAILED with violations of
# one of the named invariants: proof that the harness can catch a broken build
# (BATON_WEAKEN) or a broken setup (the asynchronous-replication failover).
#   expect-violation.sh INVARIANT[|INVARIANT...] OUTDIR baton-chaos run ... --out OUTDIR
set -uo pipefail
invariant=$1; out=$2; shift 2
if [ -n "${BATON_WEAKEN:-}" ]; then what="weakened build (BATON_WEAKEN=$BATON_WEAKEN)"; else what="negative control (${out##*/})"; fi
"$@" > /dev/null
rc=$?
if [ "$rc" -ne 1 ]; then echo "expected the checker to fail (exit 1), got exit $rc"; exit 1; fi
found=0
for inv in ${invariant//|/ }; do
  violations=$(grep -o "\"name\":\"$inv\",\"examined\":[0-9]*,\"violations\":[0-9]*" "$out/report.json" | sed 's/.*"violations"://')
  echo "$what: $inv violations=${violations:-none}"
  if [ -n "$violations" ] && [ "$violations" -gt 0 ]; then
    found=1
    grep -A3 "## Violations: $inv" "$out/report.md" | head -4
  fi
done
[ "$found" -eq 1 ]
