"""The child of tests/test_config_properties.py: under an address-space cap (1 GB above what
it holds when it starts), hypothesis writes configs with a random value of a random type at
a random field of a config's schema and runs `coevo plan` on each, in process
(`coevo.cli.main`). Every outcome must be exit 0, or exit 2 with one `error:` line; anything
else (a traceback, another exit, a MemoryError under the cap) is written to the report file
the parent reads. Usage: python tests/config_properties_child.py REPORT.json EXAMPLES N
"""

from __future__ import annotations

import contextlib
import io
import json
import resource
import sys
import tempfile
import typing
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from coevo import cli
from coevo.run.runner import _experiments

#: Every algorithm `coevo plan` covers, on its small example (each loads nothing to plan).
CONFIGS = ("taiscore_tiny.yaml", "taiscore_deepresearch_tiny.yaml", "decoevo_tiny.yaml", "rlac_bio_tiny.yaml",
           "rlac_code_tiny.yaml", "scaling_tiny.yaml")
#: Values of every kind a careless or hostile config holds: huge, negative, not finite, of
#: the wrong type, nested.
VALUES = st.one_of(
    st.integers(min_value=-10**15, max_value=10**15),
    st.sampled_from([0, -1, 10**9, 10**9 + 1, 10**12, 2**63]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.booleans(),
    st.none(),
    st.lists(st.integers(min_value=-10**12, max_value=10**12), max_size=3),
    st.dictionaries(st.text(max_size=6), st.integers(), max_size=2),
)


def leaf_paths(model: type[BaseModel], prefix: str = "", depth: int = 0) -> list[str]:
    """Every dotted field path of a config schema, nested blocks included."""
    paths = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        paths.append(path)
        for inner in (field.annotation, *typing.get_args(field.annotation)):
            if isinstance(inner, type) and issubclass(inner, BaseModel) and depth < 5:
                paths.extend(leaf_paths(inner, path + ".", depth + 1))
    return paths


def with_value(data: dict, path: str, value: object) -> dict:
    node = data
    parts = path.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[parts[-1]] = value
    return data


def plan_once(config: Path) -> tuple[int | str, str]:
    """`coevo plan CONFIG --json` in process: (exit code, or the escaped exception's name; stderr)."""
    err = io.StringIO()
    sys.argv = ["coevo", "plan", str(config), "--json"]
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            cli.main()
        except SystemExit as ended:
            return (ended.code if isinstance(ended.code, int) else 1), err.getvalue()
        except BaseException as exc:  # noqa: BLE001 - what escapes is the finding
            return type(exc).__name__, err.getvalue()
    return 0, err.getvalue()


def main(report: Path, examples: Path, n: int) -> None:
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    cap = base + 2**30  # 1 GB above what the child holds now: a plan past it fails loudly
    resource.setrlimit(resource.RLIMIT_AS, (cap + 2**30, cap + 2**30))  # address space has slack over RSS
    experiments = _experiments()
    configs = {name: yaml.safe_load((examples / name).read_text()) for name in CONFIGS}
    paths = {name: leaf_paths(experiments[data["algorithm"]].config) for name, data in configs.items()}
    bad: list[dict] = []
    tried = {"n": 0}
    work = Path(tempfile.mkdtemp())

    @settings(max_examples=n, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def one(data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(CONFIGS))
        path = data.draw(st.sampled_from(paths[name]))
        value = data.draw(VALUES)
        config = work / f"c{tried['n']}.yaml"
        tried["n"] += 1
        config.write_text(yaml.safe_dump(with_value(json.loads(json.dumps(configs[name])), path, value)))
        code, stderr = plan_once(config)
        lines = [line for line in stderr.splitlines() if line.strip()]
        if code == 0 or (code == 2 and len(lines) == 1 and lines[0].startswith("error:")):
            return
        bad.append({"config": name, "path": path, "value": repr(value)[:80], "exit": code,
                    "stderr": stderr[-400:]})

    one()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    report.write_text(json.dumps({"tried": tried["n"], "bad": bad, "peak_over_start_mb": (peak - base) / 2**20}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
