#!/usr/bin/env bash
# Runs baton-chaos and succeeds only if the checker FAILED with violations of
# the named invariant: proof that the harness can catch a broken build.
#   expect-violation.sh INVARIANT OUTDIR baton-chaos run ... --out OUTDIR
set -uo pipefail
invariant=$1; out=$2; shift 2
"$@" > /dev/null
rc=$?
if [ "$rc" -ne 1 ]; then echo "expected the checker to fail (exit 1), got exit $rc"; exit 1; fi
violations=$(grep -o "\"name\":\"$invariant\",\"examined\":[0-9]*,\"violations\":[0-9]*" "$out/report.json" | sed 's/.*"violations"://')
echo "weakened build: $invariant violations=${violations:-none}"
grep -A3 "## Violations: $invariant" "$out/report.md" | head -4
[ -n "$violations" ] && [ "$violations" -gt 0 ]
