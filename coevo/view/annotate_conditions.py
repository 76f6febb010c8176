"""`vs_condition` pairs: two conditions' final held-out answers to the same prompts, the
TAIScore paper's Table 2 (Appendix E: 50 prompts, both systems anonymised).

Each side is the last `TAG/roundR/eval` stage of a condition (or a named round), of this run
or of another (`coevo view RUN --against OTHER`). A `Comparison` names its two sides,
first-named first; its pairs cover a seeded sample of prompts (`sample_prompts`, 50 as the
paper) that every comparison of the run shares. A comparison's stage is an opaque id, so no
page or url names a condition. The pair type and the other kinds: coevo.view.annotate_pairs.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coevo.tasks.errors import DataError
from coevo.view.annotate_pairs import EVAL_STAGE, Pair, rank

if TYPE_CHECKING:
    from collections.abc import Iterable

    from coevo.rundir.store import RunStore


#: The TAIScore paper's Table 2 comparisons, first-named first (wins are counted for the
#: first), each side (condition, round; None: its last). Row 1, TAIScore against the base
#: actor (its own round 0), is here too, so that the three rows share their prompts.
PAPER_COMPARISONS: tuple[tuple[tuple[str, int | None], tuple[str, int | None]], ...] = (
    (("taiscore", None), ("taiscore", 0)),
    (("taiscore", None), ("off_the_shelf", None)),
    (("coevolution", None), ("taiscore", None)),
)
#: Prompts per comparison: the paper's 50 WritingBench prompts.
PAPER_PROMPTS = 50
_SEED_TAG = re.compile(r".+(?P<suffix>/seed\d+)")
_SIDE = re.compile(r"(?P<tag>.+?)(?:/round(?P<round>\d+))?")


@dataclass(frozen=True)
class Side:
    """One side of a comparison: `name` as the export names it (TAG, or TAG/roundR for a
    round not the last; `RUN:` before it for the --against run's), its evaluation stage, and
    the run folder it is in (None: the run being labelled)."""

    name: str
    stage: str
    run: str | None = None


@dataclass(frozen=True)
class Comparison:
    """Two sides whose answers to the same prompts are compared; wins count for `first`."""

    first: Side
    second: Side

    @property
    def id(self) -> str:
        """The comparison's stage in urls and label records: opaque, so that no page names a
        condition, and the same for the same two stages, so that labels stay with them."""
        text = f"{self.first.name}={self.first.stage}|{self.second.name}={self.second.stage}"
        return "comparison-" + hashlib.sha256(text.encode()).hexdigest()[:10]

    @property
    def title(self) -> str:
        return f"{self.first.name} vs {self.second.name}"


@dataclass(frozen=True)
class ComparisonSpec:
    """The conditions the viewer offers to compare: `pairs` (FIRST, SECOND), each TAG or
    TAG/roundR (none: the paper's Table 2 rows the run has, else every two conditions, the
    one listed later first); `against`: the run the second sides come from; `prompts` and
    `seed`: the prompt sample every comparison shares. `asked`: someone asked for these
    comparisons, so what does not fit is an error; the default, offered on every run, offers
    none where none fit, quietly."""

    pairs: tuple[tuple[str, str], ...] = ()
    against: Path | None = None
    prompts: int = PAPER_PROMPTS
    seed: int = 0
    asked: bool = False


def eval_rounds(stages: Iterable[str]) -> dict[str, dict[int, str]]:
    """Condition tag -> round -> its evaluation stage `TAG/roundR/eval`, tags in stage order."""
    out: dict[str, dict[int, str]] = {}
    for stage in stages:
        match = EVAL_STAGE.fullmatch(stage)
        if match:
            out.setdefault(match["tag"], {})[int(match["round"])] = stage
    return out


def resolve_side(text: str, rounds: dict[str, dict[int, str]], where: str, prefix: str = "") -> Side:
    """The side `text` names (TAG: its last round; TAG/roundR) among a run's evaluation
    stages `rounds`; DataError naming the run's conditions where it names none."""
    match = _SIDE.fullmatch(text)
    tag = match["tag"] if match else text
    if tag not in rounds:
        seeded = [t for t in rounds if t.startswith(f"{tag}/seed")]
        hint = (f"it was trained under several seeds: name one, e.g. {seeded[0]}" if seeded else
                f"its conditions: {', '.join(rounds) or 'none'}")
        raise DataError(f"{where} has no condition {tag!r} (no {tag}/roundR/eval stage); {hint}")
    if match is None or match["round"] is None:
        return Side(name=f"{prefix}{tag}", stage=rounds[tag][max(rounds[tag])])
    r = int(match["round"])
    if r not in rounds[tag]:
        raise DataError(f"{where} has no round {r} of {tag!r}; its evaluated rounds: "
                        f"{', '.join(map(str, sorted(rounds[tag])))}")
    return Side(name=f"{prefix}{tag}/round{r}", stage=rounds[tag][r])


def _default_pairs(rounds: dict[str, dict[int, str]], other: dict[str, dict[int, str]] | None) -> list[tuple[str, str]]:
    """The comparisons offered unasked: within a run, the paper's Table 2 rows (per training
    seed), else every two conditions; against another run, each condition both have."""
    if other is not None:
        shared = [(tag, tag) for tag in rounds if tag in other]
        return shared or [(a, b) for a in rounds for b in other]
    suffixes = dict.fromkeys((m["suffix"] if (m := _SEED_TAG.fullmatch(tag)) else "") for tag in rounds)
    found = []
    for suffix in suffixes:
        for (a, ra), (b, rb) in PAPER_COMPARISONS:
            a, b = f"{a}{suffix}", f"{b}{suffix}"
            if a in rounds and b in rounds and (rb is None or rb in rounds[b]):
                found.append((a if ra is None else f"{a}/round{ra}", b if rb is None else f"{b}/round{rb}"))
    # A config lists its baselines first and its method last, as Table 2 names the method first.
    return found or [(b, a) for a, b in combinations(rounds, 2)]


def _one_condition(where: str, rounds: dict[str, dict[int, str]]) -> DataError:
    tag = next(iter(rounds))
    return DataError(f"{where} has one condition ({tag}) and a comparison needs two: compare it with another "
                     f"run's (--against OTHER_RUN) or with its own round 0 (--conditions {tag}:{tag}/round0)")


def comparisons(stages: list[str], spec: ComparisonSpec, where: str,
                other_stages: list[str] | None = None, other_where: str = "") -> list[Comparison]:
    """The comparisons `spec` asks for in a run with these stages (and `other_stages`, the
    --against run's). Where `spec.asked`, DataError (one line naming the fix) when a side is
    not in its run or nothing can be compared; unasked, what does not fit is left out."""
    rounds = eval_rounds(stages)
    other = None if other_stages is None else eval_rounds(other_stages)
    for run, found in ((where, rounds), (other_where, other)):
        if spec.asked and found is not None and not found:
            raise DataError(f"{run} has no TAIScore evaluation stage (TAG/roundR/eval): conditions are compared "
                            "on a TAIScore run's held-out answers; give a TAIScore run")
    prefix = "" if other is None else f"{spec.against.name if spec.against else other_where}:"
    out: list[Comparison] = []
    for a, b in spec.pairs or _default_pairs(rounds, other):
        try:
            first = resolve_side(a, rounds, where)
            second = resolve_side(b, rounds if other is None else other, where if other is None else other_where,
                                  prefix)
        except DataError:
            if not spec.pairs:
                continue
            if other is None and len(rounds) == 1:
                raise _one_condition(where, rounds) from None
            raise
        if other is None and first.stage == second.stage:
            if spec.pairs:
                raise DataError(f"--conditions {a}:{b} compares {first.stage} with itself: name two conditions")
            continue
        out.append(Comparison(first, second if other is None else Side(second.name, second.stage, str(spec.against))))
    if spec.asked and not out:
        raise _one_condition(where, rounds) if other is None and len(rounds) == 1 else DataError(
            f"{where} has no two evaluated conditions to compare: name them with --conditions FIRST:SECOND")
    return out


def sample_prompts(id_sets: list[set[str]], n: int = PAPER_PROMPTS, seed: int = 0) -> list[str]:
    """The paper's prompt sample: `n` sample ids drawn (by their seeded rank, the same on
    every machine) from those every set holds, so that every comparison gets the same ones."""
    if not id_sets:
        return []
    common = set.intersection(*id_sets)
    return sorted(common, key=lambda sid: rank(seed, f"prompt|{sid}"))[:n]


def _answers(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    # An evaluation stage holds one answer per held-out prompt; an empty one is nothing to compare.
    return {row["rollout"].sample_id: row for row in rows if row["rollout"].y0.strip()}


def condition_pairs(comparison: Comparison, first_rows: list[dict[str, Any]], second_rows: list[dict[str, Any]],
                    prompts: list[str]) -> list[Pair]:
    """`vs_condition` pairs of one comparison: per sampled prompt both sides answered, the
    first side's answer against the second's (rows: `store.rollout_rows(side.stage)`)."""
    firsts, seconds = _answers(first_rows), _answers(second_rows)
    out = []
    for sid in prompts:
        a, b = firsts.get(sid), seconds.get(sid)
        if a is None or b is None:
            continue
        out.append(Pair(key=f"{comparison.id}|vs_condition|{a['id']}-{b['id']}", stage=comparison.id,
                        kind="vs_condition", x=a["rollout"].x, context=None,
                        candidates=(comparison.first.name, comparison.second.name),
                        texts=(a["rollout"].y0, b["rollout"].y0), rollout_ids=(a["id"], b["id"])))
    return out


def run_comparisons(store: RunStore, spec: ComparisonSpec) -> dict[str, tuple[Comparison, list[Pair]]]:
    """Each comparison of the run in `store` (comparison id -> it and its pairs), every one on
    the same seeded sample of the prompts all their sides answered; DataError as `comparisons`."""
    from coevo.rundir.store import RunStore

    other = RunStore(spec.against, read_only=True) if spec.against is not None else None
    try:
        found = comparisons([s for s, _ in store.rollout_stages()], spec, str(store.run_dir),
                            None if other is None else [s for s, _ in other.rollout_stages()], str(spec.against))
        rows: dict[Side, list[dict[str, Any]]] = {}
        for c in found:
            for side in (c.first, c.second):
                source = store if side.run is None else other
                if side not in rows and source is not None:
                    rows[side] = source.rollout_rows(side.stage)
    finally:
        if other is not None:
            other.close()
    prompts = sample_prompts([set(_answers(r)) for r in rows.values()], spec.prompts, spec.seed)
    return {c.id: (c, condition_pairs(c, rows[c.first], rows[c.second], prompts)) for c in found}


def comparison_spec(run_dir: Path, conditions: list[str], against: Path | None,
                    prompts: int = PAPER_PROMPTS) -> tuple[ComparisonSpec, dict[str, tuple[Comparison, list[Pair]]]]:
    """`coevo view RUN --conditions FIRST:SECOND ... --against OTHER --prompts N` checked
    before the viewer starts: the spec and the comparisons it gives. DataError, one line
    naming the fix, for a malformed pair, a folder that is not a run, or a side not there."""
    from coevo.rundir.store import STORE_FILE, RunStore

    pairs = []
    for text in conditions:
        first, sep, second = text.partition(":")
        if not (sep and first and second) or ":" in second:
            raise DataError(f"--conditions takes FIRST:SECOND, two condition names (e.g. taiscore:off_the_shelf), "
                            f"not {text!r}")
        pairs.append((first, second))
    for folder, what in ((run_dir, "RUN"), (against, "--against")):
        if folder is not None and not (folder / STORE_FILE).is_file():
            raise DataError(f"{what} {folder} is not a run folder (no {STORE_FILE}): comparing conditions needs one "
                            "TAIScore run folder there (see `coevo runs`)")
    spec = ComparisonSpec(pairs=tuple(pairs), against=against, prompts=prompts, asked=True)
    store = RunStore(run_dir, read_only=True)
    try:
        return spec, run_comparisons(store, spec)
    finally:
        store.close()
