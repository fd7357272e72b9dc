#!/usr/bin/env bash
# Validate the Prometheus alert rules and run their promtool unit tests.
# Usage: bash scripts/check-rules.sh   (from anywhere; needs promtool, see scripts/install-deps.sh)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"

promtool="${PROMTOOL:-promtool}"
if ! command -v "${promtool}" >/dev/null 2>&1; then
  echo "check-rules: promtool not found; run scripts/install-deps.sh" >&2
  exit 1
fi

"${promtool}" check rules prometheus/alerts.yml
"${promtool}" test rules prometheus/tests/*.yml
