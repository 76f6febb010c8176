"""Hostile configs end in a plan or one line, never a traceback, never a runaway: a property
test over every field of every config schema `coevo plan` reads (hypothesis, in a child
process capped at 1 GB above its start; tests/config_properties_child.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Examples per run: each plans a whole config (~20 ms), so a few hundred stay under a minute.
EXAMPLES = 300


def test_random_values_and_types_in_any_field_end_in_a_plan_or_one_line(tmp_path):
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "config_properties_child.py"), str(report),
                           str(ROOT / "examples"), str(EXAMPLES)], capture_output=True, text=True, timeout=600,
                          env={"COEVO_QUIET": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(report.read_text())
    assert found["tried"] >= EXAMPLES
    assert found["bad"] == [], json.dumps(found["bad"][:5], indent=1)
    assert found["peak_over_start_mb"] < 1024
