#!/usr/bin/env bash
# Run the elicitkit demo (a server eliciting input mid-tool-call). Extra arguments go to the demo.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

bash scripts/bootstrap.sh
exec .venv/bin/elicitkit demo "$@"
