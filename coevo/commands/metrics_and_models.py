"""`coevo metrics` and `coevo models`: what a metric's name means, and which model specs the
commands and configs accept."""

from __future__ import annotations

from coevo.commands.console import out, print_rows


def print_metric_definitions(names: list[str] | None) -> None:
    """The definitions of the metrics `names` (none: every defined one) as a table."""
    from coevo.eval.metric_defs import DEFINITIONS, describe, is_defined

    rows = []
    for name in names or [pattern for pattern, _ in DEFINITIONS]:
        definition = describe(name)
        rows.append({"metric": name, "title": definition.title, "unit": definition.axis_label if definition.unit else "",
                     "estimate": "yes" if definition.estimate else "", "definition": definition.definition
                     if names is None or is_defined(name) else "not a registered metric (no definition)"})
    print_rows(rows, title="metric definitions", define=False)


def print_model_specs(prepare: bool) -> None:
    """The model specs as a table, then the `python:` scorers' signatures; with `prepare`,
    the embedded model converted for transformers first."""
    from coevo.llm.specs import describe_specs

    if prepare:
        from coevo.llm.embedded import hf_dir

        out.print(f"embedded model ready for transformers at {hf_dir()}")
    from coevo.llm.python_functions import SIGNATURES

    print_rows(describe_specs(), title="model specs")
    out.rule("python: scorers (a function where a judge goes), one signature per judge kind")
    for kind, signature in SIGNATURES.items():
        out.print(f"{kind:9} {signature}", markup=False, highlight=False)
