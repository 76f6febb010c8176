"""The viewer's DecoEvo page: every skill version with its diff, decision and reason, and the
diagnostic trajectory (proxy score under generated rubrics vs gold-rubric score).

Versions are the store's `skill` records (`coevo.algorithms.decoevo.skills.versions`), written the
moment each decision is taken; the trajectory comes from the per-step metrics `diag_proxy`
and `diag_gold` each (method, seed) logs under its stage "<method>/seed<k>". Both are there
while a run is going, not only in its summary.json.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request

if TYPE_CHECKING:
    from coevo.rundir.store import RunStore

router = APIRouter()


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """A unified diff as (class, line): `add`, `del`, `hunk`, `file` or `same`."""
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "same"
        out.append((kind, line))
    return out


def skill_groups(store: RunStore) -> list[dict[str, Any]]:
    """The skill versions by (method, seed), each group's versions in decision order:
    {"method", "seed", "versions": [{"v": SkillVersion, "diff": [(class, line)], "details"}],
    "accepted": n, "candidates": n}."""
    from coevo.algorithms.decoevo.skills import versions

    groups: dict[tuple[str, int], dict[str, Any]] = {}
    for v in versions(store):
        group = groups.setdefault((v.method, v.seed), {"method": v.method, "seed": v.seed, "versions": [],
                                                       "accepted": 0, "candidates": 0})
        group["versions"].append({"v": v, "diff": diff_lines(v.diff), "details": v.details})
        if v.is_candidate:
            group["candidates"] += 1
            group["accepted"] += v.accepted
    return list(groups.values())


def trajectory(store: RunStore) -> dict[str, dict[str, dict[int, list[float]]]]:
    """{method: {"proxy" | "gold": {step: [value per seed]}}} from the diagnostic metrics."""
    out: dict[str, dict[str, dict[int, list[float]]]] = {}
    for m in store.metrics():
        if m["name"] not in ("diag_proxy", "diag_gold") or m["value"] is None or m["round"] is None:
            continue
        method = m["stage"].split("/seed")[0]
        kind = m["name"].removeprefix("diag_")
        out.setdefault(method, {}).setdefault(kind, {}).setdefault(int(m["round"]), []).append(m["value"])
    return out


def trajectory_figure(points: dict[str, dict[str, dict[int, list[float]]]]) -> dict[str, Any] | None:
    """Two panels, proxy and gold, a line per method (its mean over seeds at each step)."""
    from coevo.view.plots import Panel, small_multiples

    panels = []
    for kind, label in (("proxy", "proxy: score under generated rubrics"), ("gold", "gold-rubric score")):
        lines = {method: [(step, sum(vs) / len(vs)) for step, vs in sorted(by.get(kind, {}).items())]
                 for method, by in points.items()}
        lines = {method: line for method, line in lines.items() if line}
        if lines:
            # Both scores are 0-1 (diag_proxy, diag_gold): the registry's one scale, so the panels compare.
            panels.append(Panel(label, lines, metric=f"diag_{kind}"))
    if not panels:
        return None
    figure = small_multiples("Diagnostic trajectory: proxy vs gold", panels, "inner step", columns=2)
    figure["id"] = "plot-trajectory"
    return figure


def trajectory_rows(points: dict[str, dict[str, dict[int, list[float]]]]) -> list[dict[str, Any]]:
    """The trajectory as a table: method, step, proxy, gold (means over seeds) and the gap."""
    rows = []
    for method, by in points.items():
        for step in sorted(set(by.get("proxy", {})) | set(by.get("gold", {}))):
            proxy, gold = (by.get(k, {}).get(step) for k in ("proxy", "gold"))
            p = sum(proxy) / len(proxy) if proxy else None
            g = sum(gold) / len(gold) if gold else None
            rows.append({"method": method, "step": step, "proxy": p, "gold": g,
                         "gap": p - g if p is not None and g is not None else None})
    return rows


@router.get("/runs/{run_id}/skills")
def skills_page(request: Request, run_id: str, method: str = "", decision: str = "", name: str = ""):
    """Every skill version (diff, decision, reason) and the proxy-vs-gold trajectory."""
    from coevo.view.context import reading, render
    from coevo.view.plots import figure_json

    with reading(request, run_id) as store:
        groups = skill_groups(store)
        points = trajectory(store)
    methods = [g["method"] for g in groups]
    names = sorted({item["v"].name for g in groups for item in g["versions"]})
    shown = []
    for group in groups:
        if method and group["method"] != method:
            continue
        kept = [item for item in group["versions"]
                if (not decision or item["v"].decision == decision) and (not name or item["v"].name == name)]
        if kept:
            shown.append({**group, "versions": kept})
    figure = trajectory_figure(points)
    return render(request, "skills.html", run_id=run_id, active="skills", needs_plotly=figure is not None,
                  groups=shown, all_groups=groups, methods=list(dict.fromkeys(methods)), names=names,
                  method=method, decision=decision, name=name, figure=figure, figure_json=figure_json,
                  trajectory=trajectory_rows(points))
