#!/usr/bin/env bash
# Run the elicitkit demo (a server eliciting input mid-tool-call). Extra arguments go to the demo.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

# Only what the demo needs (the package and its runtime dependencies): no node, npm or browser.
bash scripts/bootstrap.sh --demo
exec .venv/bin/elicitkit demo "$@"
