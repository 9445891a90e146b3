#!/usr/bin/env bash
# Idempotent setup of the test virtual environment ($KVFUSE_HOME/venv-test): the official OpenAI Python client,
# pinned, which tests/serve/serve_test.py (Serve.OpenAiClients) drives `kvrun serve` with. `make setup-test` (and so
# `make test`) runs it after scripts/setup.sh. A second run finds the pinned version importable and returns at once.
set -euo pipefail
KVFUSE_HOME=${KVFUSE_HOME:-$HOME/.cache/kvfuse}
venv="$KVFUSE_HOME/venv-test"
openai_version=3.57.0
packages=(
  "openai==$openai_version"  # the client kvrun serve must answer as an OpenAI-compatible server
)

log() { echo "setup-test-venv: $*"; }

installed() {
  [ -x "$venv/bin/python" ] && "$venv/bin/python" - "$openai_version" <<'PY' 2>/dev/null
import sys
import openai
sys.exit(0 if openai.__version__ == sys.argv[1] else 1)
PY
}

if installed; then
  log "ok ($venv, openai $openai_version)"
  exit 0
fi
[ -x "$venv/bin/python" ] || { log "creating $venv"; python3 -m venv "$venv"; }
log "installing ${packages[*]}"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "${packages[@]}"
installed || { echo "setup-test-venv: error: openai $openai_version still not importable from $venv" >&2; exit 1; }
log "ok ($venv, openai $openai_version)"
