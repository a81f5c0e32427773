"""The machine facts every benchmark JSON and run.json carry (#17: every figure names its CPU)."""

import json
import subprocess
import sys

from biaslens.machine import SPEED_FLAGS, describe_machine, machine_facts, parse_cpuinfo


def test_parse_cpuinfo_takes_the_first_processor_and_only_speed_flags():
    text = ("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8481C\nflags\t\t: fpu avx avx2 avx512f amx_bf16 sse\n"
            "processor\t: 1\nmodel name\t: other\nflags\t\t: fpu\n")
    assert parse_cpuinfo(text) == ("Intel(R) Xeon(R) Platinum 8481C", ("avx", "avx2", "avx512f", "amx_bf16"))
    assert parse_cpuinfo("") == (None, ())


def test_machine_facts_name_the_cpu_and_are_json():
    facts = machine_facts()
    assert isinstance(facts["cpu_model"], str) and facts["cpu_model"]
    assert set(facts["cpu_flags"]) <= set(SPEED_FLAGS)
    assert facts["cpus"] >= 1
    json.dumps(facts)
    line = describe_machine()
    assert facts["cpu_model"] in line and f"{facts['cpus']} cores" in line


def test_machine_facts_do_not_import_torch():
    code = "import sys; from biaslens.machine import machine_facts; machine_facts(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_busy_machine_is_named_before_a_slow_run(tmp_path, monkeypatch):
    """#17: on a busy machine the default run took 6-10 min with no hint why."""
    import io

    from rich.console import Console

    import biaslens
    from biaslens.machine import busy_note

    assert busy_note(load=0.5, cpus=2) is None and busy_note(load=1.9, cpus=2) is None
    assert "load average 2.0 on 2 cores" in busy_note(load=2.0, cpus=2)
    monkeypatch.setattr("os.getloadavg", lambda: (8.0, 8.0, 8.0))
    buf = io.StringIO()
    biaslens.run(model="fake", sample=120, axes=["ability"], out=str(tmp_path / "run"), cache_dir=str(tmp_path / "c"),
                 console=Console(file=buf, width=200))
    assert "this machine is busy (load average 8.0" in buf.getvalue()
    import json

    platform = json.loads((tmp_path / "run" / "run.json").read_text())["platform"]
    facts = machine_facts()
    assert platform["cpu_model"] == facts["cpu_model"] and platform["cpu_flags"] == facts["cpu_flags"]
