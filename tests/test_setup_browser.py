"""The README's test command gets the browser tests CI runs, or a clear reason: scripts/setup.sh
--test runs scripts/install_browser.sh, which finds Chromium, installs it as root with apt-get,
or says how to get it (the browser tests' skip reason says the same)."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _fake(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def _run(path_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/bash", str(ROOT / "scripts" / "install_browser.sh")], capture_output=True, text=True,
                          env={"PATH": str(path_dir)}, timeout=30)


def test_found_chromium_is_used(tmp_path):
    _fake(tmp_path, "chromium", "exit 0")
    r = _run(tmp_path)
    assert r.returncode == 0 and "chromium for the browser tests:" in r.stdout


def test_as_root_it_installs_with_apt_get(tmp_path):
    _fake(tmp_path, "id", "echo 0")
    # the fake apt-get "installs" chromium into the PATH folder and records its call
    _fake(tmp_path, "apt-get", f'echo "$@" >> {tmp_path}/apt.log; '
                               f'case "$*" in *install*) printf "#!/bin/sh\\nexit 0\\n" > {tmp_path}/chromium; '
                               f'/bin/chmod +x {tmp_path}/chromium;; esac')
    r = _run(tmp_path)
    assert r.returncode == 0 and "installing chromium" in r.stdout, r.stdout + r.stderr
    assert "install -y -qq chromium" in (tmp_path / "apt.log").read_text()


def test_without_root_it_says_how(tmp_path):
    _fake(tmp_path, "id", "echo 1000")
    r = _run(tmp_path)
    assert r.returncode == 0 and "apt-get install chromium" in r.stderr and "will skip" in r.stderr


def test_setup_runs_it_with_the_test_extras_and_the_skip_reason_says_how():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert '[ "${1:-}" = "--test" ] && bash scripts/install_browser.sh' in setup
    browser_tests = (ROOT / "tests" / "test_report_browser.py").read_text()
    assert "sudo apt-get install chromium" in browser_tests and "scripts/setup.sh --test" in browser_tests
