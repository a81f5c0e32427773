#!/usr/bin/env bash
# Chromium for the report tests (tests/test_report_browser.py renders every page in it): installed
# with apt-get when it is absent and this runs as root, best effort; otherwise a note says how.
chromium_path=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$chromium_path" ]; then
  echo "chromium for the browser tests: $chromium_path"
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium for the browser tests (apt-get) ..."
  if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1; then
    echo "chromium for the browser tests: $(command -v chromium)"
    exit 0
  fi
fi
echo "note: no chromium, so the browser tests (tests/test_report_browser.py) will skip; install it with" \
     "'sudo apt-get install chromium' (or your system's chromium package) and run the tests again" >&2
exit 0
