"""Skill documents and their history: every version, its parent, diff and decision.

DecoEvo's whole optimised state is two natural-language documents (the solver skill and
the rubric-generator skill). A method keeps an *incumbent* version of each; every
candidate a rewriter proposes becomes a new version whose parent is the incumbent it was
derived from, and is recorded whether it is accepted or not, with the reason. Keeping
rejected candidates is deliberate: the paper's story (what the gates refused and why) is
in them.

Records land in the run store as `put_record("skill", key, ...)` the moment a decision is
taken, so nothing is lost on a crash, and are exported as markdown files
(`skills/<method>/seed<k>/<name>_v<N>.md`) whose first line is an HTML comment holding the
metadata; `read_skill_file` strips it, so an exported file can be fed straight back to
`coevo eval skill --skill FILE`.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any, Literal

from coevo.rundir.store import RunStore
from coevo.core.types import Skill

SOLVER = "solver"
GENERATOR = "rubric_generator"
KIND = "skill"
_COMMENT = re.compile(r"^\s*<!--.*?-->\s*", re.DOTALL)


class SkillVersion(Skill):
    """One recorded version of a skill: the `Skill` itself, who made it, its diff and decision.

    The acceptance rule's measurements (gate scores, audit objectives, ...) and the
    proposer's notes travel as extra fields (`Record` keeps unknown fields), so a new
    policy's details land in the history without a change here.
    """

    method: str
    seed: int
    step: int
    diff: str = ""
    decision: Literal["accepted", "rejected"]

    @property
    def details(self) -> dict[str, Any]:
        """The policy's and proposer's extra fields (gate scores, audit objectives, notes)."""
        return dict(self.model_extra or {})

    @property
    def is_candidate(self) -> bool:
        """A rewriter's proposal, not the initial version every run starts from."""
        return self.version > 0


def unified_diff(old: str, new: str, old_label: str, new_label: str) -> str:
    """A difflib unified diff of two skill texts ('' when they are equal)."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True),
        fromfile=old_label, tofile=new_label, lineterm="",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


class SkillHistory:
    """The versions of the skills of one (method, seed) run, written through to the store.

    `initial(name, text)` records version 0; `propose(parent, text)` numbers a candidate;
    `decide(candidate, parent, accepted, why, step=..., **details)` records it as a
    `SkillVersion` with its diff and decision. Any skill name works: the loop may evolve
    more documents than the two DecoEvo's paper names.
    """

    def __init__(self, store: RunStore | None, method: str, seed: int):
        self.store = store
        self.method = method
        self.seed = seed
        self.versions: dict[str, list[SkillVersion]] = {}

    def initial(self, name: str, text: str, step: int = 0) -> Skill:
        """Version 0 of skill `name`, recorded as accepted (every run starts from it)."""
        skill = Skill(name=name, version=0, text=text, parent=None, accepted=True,
                      why="initial skill")
        self._record(skill, step=step, diff="", details={})
        return skill

    def propose(self, parent: Skill, text: str) -> Skill:
        """A new candidate version derived from `parent` (not yet accepted)."""
        version = 1 + max((v.version for v in self.versions.get(parent.name, [])), default=0)
        return Skill(name=parent.name, version=version, text=text, parent=parent.version)

    def decide(self, candidate: Skill, parent: Skill, accepted: bool, why: str, *, step: int,
               **details: Any) -> Skill:
        """Record the candidate with its diff against `parent`, the decision and its reason."""
        decided = candidate.model_copy(update={"accepted": accepted, "why": why})
        diff = unified_diff(parent.text, candidate.text, f"{parent.name}_v{parent.version}",
                            f"{candidate.name}_v{candidate.version}")
        self._record(decided, step=step, diff=diff, details=details)
        return decided

    def _record(self, skill: Skill, *, step: int, diff: str, details: dict[str, Any]) -> None:
        entry = SkillVersion(**skill.model_dump(), method=self.method, seed=self.seed, step=step,
                             diff=diff, decision="accepted" if skill.accepted else "rejected",
                             **details)
        self.versions.setdefault(skill.name, []).append(entry)
        if self.store is not None:
            key = f"{self.method}/seed{self.seed}/{skill.name}/v{skill.version}"
            self.store.put_record(KIND, key, entry.model_dump())


def versions(store: RunStore) -> list[SkillVersion]:
    """Every skill version recorded in a run, typed, in the order they were decided."""
    return [SkillVersion.model_validate(record) for _, record in store.get_records(KIND)]


def export_markdown(records: list[SkillVersion], run_dir: str | Path) -> list[Path]:
    """Write each version to `skills/<method>/seed<k>/<name>_v<N>.md`; return the paths."""
    paths = []
    for r in records:
        folder = Path(run_dir) / "skills" / r.method / f"seed{r.seed}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{r.name}_v{r.version}.md"
        why = " ".join(r.why.split()).replace("--", "-")  # "--" would end the HTML comment
        header = (f"<!-- coevo skill: {r.name} v{r.version} (parent "
                  f"{'none' if r.parent is None else 'v' + str(r.parent)}), {r.decision}, "
                  f"method {r.method}, seed {r.seed}, step {r.step}: {why} -->\n")
        path.write_text(header + r.text.rstrip() + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def read_skill_file(path: str | Path) -> str:
    """A skill's text from a file, without the metadata comment `export_markdown` adds."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"skill file {path} does not exist; exported skills are under "
                                "RUN/skills/<method>/seed<k>/solver_v<N>.md")
    text = _COMMENT.sub("", path.read_text(encoding="utf-8"), count=1).strip()
    if not text:
        from coevo.tasks.loaders import DataError

        raise DataError(f"skill file {path} holds no skill text")
    return text
