"""`coevo audit judge` as a library call: specs and files in, a `JudgeAudit` out.

Everything that can be wrong with the input (an unknown kind, a probes file, a `python:`
function, data without rubrics for the gold judge) is found before any model loads.
"""

from __future__ import annotations

import json
from pathlib import Path

from coevo.audit.items import WRITE_MAX_TOKENS, slot_items, write_items
from coevo.audit.judge_audit import JudgeAudit, audit_judge
from coevo.audit.probes import AUDIT_KINDS, Probe, default_probes, read_probes
from coevo.core.strict import ConfigError
from coevo.settings.role_specs import JudgeRole
from coevo.tasks.errors import DataError

#: The model that writes the real answers when the judge's spec cannot write any.
DEFAULT_WRITER = "smollm2"


def audit_kind(kind: str) -> str:
    """The canonical judge name, refused (ConfigError listing the kinds) when not auditable."""
    from coevo.roles.judging import judge_name

    import difflib

    canonical = kind.strip().replace("-", "_")
    if canonical not in AUDIT_KINDS:
        near = difflib.get_close_matches(canonical, list(AUDIT_KINDS), n=1)
        if near and near[0] != canonical:  # a typo: suggest only a kind the audit takes
            raise ConfigError(f"--kind {kind}: no such judge; did you mean {near[0]}? The audit takes "
                              f"{', '.join(AUDIT_KINDS)}")
        judge_name(canonical)  # an unknown judge is named as `coevo judge` names it
        raise ConfigError(f"--kind {kind}: an audit knows where a probe goes for {', '.join(AUDIT_KINDS)}; "
                          f"not for {canonical}")
    return canonical


def writer_spec(judge: str, writer: str | None) -> str:
    """Who writes the real answers: `writer`, else the judged model itself, else (a replay
    file or a Python function cannot write answers) the embedded model."""
    if writer:
        return writer
    stripped = judge.strip()
    return DEFAULT_WRITER if stripped.startswith(("python:", "replay:")) else stripped


def run_judge_audit(judge: str, kind: str, *, data: str = "bundled:writing", probes_file: Path | None = None,
                    n: int = 8, seed: int = 0, other: str | None = None, writer: str | None = None,
                    max_tokens: int | None = None) -> JudgeAudit:
    """Audit the judge `judge` (a model spec) of `kind` on the first `n` prompts of `data`.

    The real answers are written by `writer` (see `writer_spec`); with `other`, the slot is
    also written by the judge's own model and by `other` for the self-preference measure.
    `max_tokens` caps the judge's answers and the written texts (default: the judge's paper
    setting, 2048, and 256 for written texts).
    """
    from coevo.roles.judging import rollout_judge
    from coevo.llm.python_functions import check_python_spec, is_python_spec
    from coevo.llm.specs import check_spec, load_model
    from coevo.roles.judges import KIND_OF_JUDGE
    from coevo.tasks.loaders import load_samples

    kind = audit_kind(kind)
    if n < 1:
        raise ConfigError(f"--n must be at least 1, got {n}")
    probes: list[Probe] = default_probes(kind) + (read_probes(probes_file) if probes_file else [])
    if is_python_spec(judge):
        check_python_spec(judge, [KIND_OF_JUDGE[kind]], "--judge")
        if other:
            raise ConfigError(f"--other compares answers written by the judge's own model with another's; "
                              f"{judge} is a Python function and writes none: drop --other")
    else:
        check_spec(judge)
    for spec in (writer, other):
        if spec:
            check_spec(spec)
    samples = load_samples(data, limit=n)
    if kind == "gold_rubric":
        lacking = [s.id for s in samples if s.rubric is None or not s.rubric.criteria]
        if lacking and not is_python_spec(judge):
            raise DataError(f"the gold_rubric judge scores against each sample's rubric; {data} has none for "
                            f"{lacking[:5]}: give data with a 'rubric' column (bundled:writing has them)")
    sampling = JudgeRole().sampling
    if max_tokens:
        sampling = sampling.model_copy(update={"max_tokens": max_tokens})
    judge_model = load_model(judge)
    scorer = rollout_judge(kind, judge_model, sampling)
    write = writer_spec(judge, writer)
    budget = min(max_tokens or WRITE_MAX_TOKENS, WRITE_MAX_TOKENS)
    items = write_items(kind, samples, load_model(write), seed=seed, max_tokens=budget)
    own = other_items = None
    if other:
        own = items if write == judge.strip() else slot_items(kind, items, judge_model, seed=seed, max_tokens=budget)
        other_items = slot_items(kind, items, load_model(other), seed=seed, max_tokens=budget)
    return audit_judge(kind, scorer, samples, items, n=n, seed=seed, probes=probes, own=own, other=other_items,
                       judge_label=judge, other_label=other)


def write_audit(audit: JudgeAudit, out_dir: Path) -> Path:
    """DIR/audit.json: the audit as `--json` prints it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "audit.json"
    path.write_text(json.dumps(audit_json(audit), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def audit_json(audit: JudgeAudit) -> dict:
    """The audit as one JSON object: the record, plus its plain-words `warnings`."""
    return audit.as_json()


def audit_rows(audit: JudgeAudit) -> list[dict]:
    """One table row per figure: measure, value, 95% CI, n, flagged."""
    flagged = {flag.probe for flag in audit.flags}
    rows = []

    def row(name: str, estimate, flag: str | None = None) -> None:
        if estimate is None:
            return
        ci = "" if estimate.low is None else f"{estimate.low:.2f} – {estimate.high:.2f}"
        rows.append({"measure": name, "value": estimate.value, "95% CI": ci, "n": estimate.n,
                     "flag": "FLAG" if (flag or name) in flagged else "", "note": estimate.note or ""})

    row("retest_spearman", audit.retest_spearman)
    row("retest_tie_rate", audit.retest_tie_rate)
    row("retest_agreement", audit.retest_agreement)
    row("position_consistency", audit.position_consistency)
    row("first_position_rate", audit.first_position_rate)
    row("criterion_order_rate (prompts)", audit.criterion_order_rate, "criterion_order")
    row("same_pattern_rate (prompts)", audit.same_pattern_rate, "same_pattern")
    row("fooled_rate (all master keys)", audit.fooled_rate, "master_keys")
    for probe in audit.master_keys:
        row(f"  fooled by {probe.name}", probe.fooled, f"master_key:{probe.name}")
    change = "preference" if audit.kind == "pairwise" else "mean change"
    for name in ("padding", "injection", "self_preference"):
        found = getattr(audit, name)
        if found is not None:
            row(f"{name}: {change}", found.mean, f"{name}:mean")
            row(f"{name}: share raised", found.raised, name)
    return rows
