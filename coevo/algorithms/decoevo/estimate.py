"""DecoEvo's model calls counted before a run (`estimate` in paper.py; coevo/plan/estimate.py).

The loop (loop.py) is replayed here on symbols instead of texts: every model call it would
make gets the key the call cache would give it (the role, the sampling seed, and where
each input came from: which skill version, which question, which answer), and only a key
not seen before is counted, as the run's cost rows count only completions the model made
(`cache_hits` apart). That is what makes the count right for a run of several methods:
under one seed, SkillOpt, SC-CoEvo and DecoEvo ask the same first inner step, the same
outer-step audit and the same round-0 judge audit, and only the first asks the model.

Data-dependent branches take one expected path (`ExpectedPath`); each guess is a note.
Stages are the cost rows' own: `decoevo` (the runner's tag over the whole loop) and `test`
(the final answers and their gold grades; a call the loop made earlier under `decoevo`, e.g.
the judge audit's answer to a test question under the same final skill, stays there).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from coevo.audit.probes import INJECTIONS, MASTER_KEYS, PADDING, PROMPT_FIELD
from coevo.plan.estimate import CallEstimate, completion_tokens, template_tokens, text_tokens
from coevo.prompts import TemplateError
from coevo.roles.schemas import REASON_LIMIT

STAGE, TEST = "decoevo", "test"
#: The roles' cost-row names (call tags: roles/decoevo.py, roles/judges.py).
SOLVER, RUBRICS, JUDGE, GRADER = "solver", "rubric_generator", "judge:criteria", "judge:gold_rubric"
S_REWRITER, G_REWRITER = "solver_rewriter", "generator_rewriter"
STRUCTURAL, CONTRASTIVE = "structural_auditor", "contrastive_auditor"


@dataclass(frozen=True)
class ExpectedPath:
    """The expected path through the loop's data-dependent branches."""

    #: The judge finds unmet criteria on every train batch, so every inner step has a solver
    #: candidate (False: the embedded 135M judge marking every criterion met, no candidate).
    unmet_criteria: bool = True
    #: A solver candidate passes its gate (SkillOpt, SC-CoEvo, DecoEvo's inner rule). The
    #: expectation: rejected; the margin delta over the same gate questions refused all 12
    #: candidates of examples/decoevo_tiny.yaml on the embedded model (2026-12-03).
    accept_solver: bool = False
    #: A rubric-generator candidate passes DecoEvo's Pareto rule (it took 2 of 2 there) ...
    accept_generator: bool = True
    #: ... and SC-CoEvo's score-coupled rule (it took 0 of 2 there: the solver's score must rise).
    accept_coupled: bool = False


def path_notes(path: ExpectedPath) -> list[str]:
    """The guesses behind the count, in plain words."""
    said = {True: "accepted", False: "rejected"}
    unmet = ("every train batch has unmet criteria and every rewrite is readable and new, so each inner step "
             "asks the solver rewriter once" if path.unmet_criteria else
             "the judge marks every train criterion met: no solver candidate, every inner step a stall")
    return [
        f"expected path: every solver-skill candidate is {said[path.accept_solver]} by its gate, every "
        f"rubric-generator candidate {said[path.accept_generator]} by DecoEvo's Pareto rule and "
        f"{said[path.accept_coupled]} by SC-CoEvo's score-coupled rule (decided at run time; an accepted "
        "skill makes the next answers and rubrics new calls, and s rejections in a row bring an outer step forward)",
        f"expected path: {unmet}; every generator rewrite is readable and new (one generator-rewriter "
        "call per outer step)",
        "expected path: near-ties fill the audit (min(P, m//2 per question) pairs, no blind verdict "
        "'equivalent'); a wide epsilon and a small backbone make that likely, a strong judge does not",
        "skill documents: the initial texts from the config, an edited one counted at its cap "
        "(max_skill_words words, or the rewriter's expected completion if shorter)",
    ]


@dataclass
class Ledger:
    """The call cache on symbols: completions per key, and what new ones cost per (stage, role)."""

    seen: dict[Any, int] = field(default_factory=dict)
    rows: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def ask(self, stage: str, role: str, key: Any, prompt: int, completion: int, n: int = 1) -> None:
        """`n` completions for `key`; those the cache already holds (same key, lower index) are free."""
        have = self.seen.get(key, 0)
        new = max(0, n - have)
        self.seen[key] = max(have, n)
        # A row even for an ask the cache answers: the run's cost rows list it (0 calls, its hits).
        row = self.rows.setdefault((stage, role), [0, 0, 0])
        if new:
            row[0] += new
            row[1] += new * prompt
            row[2] += new * completion

    def estimates(self, spec: str, grader_spec: str) -> list[CallEstimate]:
        """The rows as the shared module's estimates (the grader's on its own model)."""
        out = []
        for (stage, role), (calls, prompt, written) in self.rows.items():
            out.append(CallEstimate(stage=stage, role=role, spec=grader_spec if role == GRADER else spec,
                                    calls=calls, prompt_tokens=prompt, completion_tokens=written))
        return out


def seed_of(sampling: Any, seed: int) -> int | None:
    """The seed a role's calls carry (backbone.seeded): none for a greedy role."""
    return seed if sampling.temperature > 0 else None


def schema_bound(sampling: Any, ceiling: float) -> int:
    """A JSON answer's tokens: what its schema lets it write, within `max_tokens`.

    Measured on the embedded model: schema-bound answers fill their text fields (a judge's
    rationales, an auditor's repair) nearly to their caps, 0.9-1.0 of the ceiling here."""
    return max(1, min(sampling.max_tokens, round(ceiling)))


@dataclass
class Data:
    """What the count reads of the data: partition sizes and the texts' mean lengths."""

    sizes: dict[str, int]
    #: Mean prompt tokens per partition.
    question: dict[str, int]
    #: Mean tokens of a held-out question's gold criteria block, and its mean criteria count.
    gold: int = 0
    gold_criteria: float = 0.0

    @classmethod
    def of(cls, parts: dict[str, list]) -> Data:
        """From the partitions the run will make (lists of Samples)."""
        held = [s for name in ("test", "diagnostic") for s in parts[name] if s.rubric and s.rubric.criteria]
        return cls(sizes={name: len(group) for name, group in parts.items()},
                   question={name: _mean([text_tokens(s.prompt) for s in group]) for name, group in parts.items()},
                   gold=_mean([_gold_block(s.rubric.criteria) for s in held]),
                   gold_criteria=sum(len(s.rubric.criteria) for s in held) / len(held) if held else 0.0)


def _gold_block(criteria: list) -> int:
    """The tokens of the grader's criteria block (judges._criteria_block's lines)."""
    return text_tokens("\n".join(f"{i}. {c.name}: {c.description or ''}" for i, c in enumerate(criteria, 1)))


def _mean(values: list[int]) -> int:
    return round(sum(values) / len(values)) if values else 0


class Tokens:
    """Each role's prompt and completion tokens under `config` (see the module's notes)."""

    def __init__(self, config: Any, data: Data):
        roles, chars, self.config, self.data = config.roles, config.max_text_chars, config, data
        crit = config.max_criteria  # the schema allows up to max; a rubric is counted full
        self.answer = completion_tokens(roles.solver.sampling.answer)
        self.rollout = completion_tokens(roles.solver.sampling.rollout)
        self.rubric = schema_bound(roles.rubric_generator.sampling, crit * (8 + chars / 4) + 4)
        self.verdicts = schema_bound(roles.judge.sampling, crit * (12 + chars / 4) + 4)
        self.structural = schema_bound(roles.auditor.sampling, 16 + 2 * chars / 4)
        self.blind = schema_bound(roles.auditor.sampling, 12 + chars / 4)
        self.explained = schema_bound(roles.auditor.sampling, 12 + 2 * chars / 4)
        self.rewrite = schema_bound(roles.rewriter.sampling, 12 + chars / 4 + config.max_skill_words * 7 / 4)
        # The gold grader's reasons: about half their cap on the embedded model (64 of 108).
        self.grade = schema_bound(roles.grader.sampling, data.gold_criteria * (12 + REASON_LIMIT / 8) + 4)
        self.edited_skill = min(round(config.max_skill_words * 4 / 3), self.rewrite)
        self.initial = {"S": text_tokens(config.initial_solver_skill), "G": text_tokens(config.initial_generator_skill)}
        self.spec = _spec_tokens(config.audit_spec)

    def skill(self, version: tuple) -> int:
        """A skill version's tokens: its initial text, or an edited one at its cap."""
        return self.initial[version[0]] if len(version) == 1 else self.edited_skill

    def q(self, part: str) -> int:
        return self.data.question.get(part, 0)

    def failures(self, batch: int) -> int:
        """The solver rewriter's failure lines: up to max_failures unmet criteria of the batch."""
        lines = min(self.config.max_failures, batch * self.config.max_criteria)
        chars = self.config.max_text_chars
        return lines * (min(40, self.q("train")) + round(chars / 4) + round(min(chars, 160) / 4) + 8)

    def audit_lines(self, records: int) -> int:
        """The generator rewriter's lines of audit records (structural and contrastive)."""
        return records * (round(2 * min(self.config.max_text_chars, 200) / 4) + 8)


def _spec_tokens(spec: str) -> int:
    try:
        return template_tokens(spec)
    except TemplateError:  # a user's spec file that is not here: its size is unknown, counted as none
        return 0


class MethodCount:
    """One (method, seed) of the loop, replayed on symbols into the shared `Ledger`.

    A skill version is a tuple: ("S",) / ("G",) the initial texts, a longer one an edit
    (made from what, where), so equal tuples are the same text. A question is
    (partition, index); an answer is (its solver call's key, sample index)."""

    def __init__(self, ledger: Ledger, tokens: Tokens, config: Any, seed: int, method: str, path: ExpectedPath):
        self.led, self.tok, self.config, self.seed, self.path = ledger, tokens, config, seed, path
        self.inner = method != "zero_shot"
        self.outer = method if method in ("sc_coevo", "decoevo") else None
        self.S, self.G = ("S",), ("G",)
        self.stage = STAGE
        r = config.roles
        self.answer_key = ("answer", seed_of(r.solver.sampling.answer, seed))
        same = r.solver.sampling.rollout == r.solver.sampling.answer  # then rollout 0 is the cached answer
        self.rollout_key = self.answer_key if same else ("rollout", seed_of(r.solver.sampling.rollout, seed))
        self.judge_seed = seed_of(r.judge.sampling, seed)

    def questions(self, part: str) -> list[tuple[str, int]]:
        return [(part, i) for i in range(self.tok.data.sizes.get(part, 0))]

    # -- the roles' calls --------------------------------------------------------------
    def solve(self, qs: list, skill: tuple, n: int = 1, rollout: bool = False) -> list[list[tuple]]:
        """n answers per question under `skill` (the answer's or the rollout's sampling)."""
        key, out = self.rollout_key if rollout else self.answer_key, []
        written = self.tok.rollout if rollout else self.tok.answer
        for part, i in qs:
            call = ("solver", key, skill, part, i)
            self.led.ask(self.stage, SOLVER, call, template_tokens("decoevo_solver") + self.tok.skill(skill)
                         + self.tok.q(part), written, n)
            out.append([(call, j, written) for j in range(n)])
        return out

    def rubrics(self, qs: list, skill: tuple) -> list[tuple]:
        sampling = self.config.roles.rubric_generator.sampling
        out = []
        for part, i in qs:
            call = ("rubric", seed_of(sampling, self.seed), skill, part, i)
            self.led.ask(self.stage, RUBRICS, call, template_tokens("decoevo_rubric_generator")
                         + self.tok.skill(skill) + self.tok.q(part), self.tok.rubric)
            out.append(call)
        return out

    def judge(self, qs: list, answers: list[tuple], rubrics: list[tuple], seed: Any = "own",
              variant: str = "real", answer_tokens: int | None = None) -> None:
        """One criterion judgment per (question, answer, rubric); `seed`: the audit's passes."""
        if self.config.roles.judge.scorer is not None:  # code judges: no model call
            return
        seed = self.judge_seed if seed == "own" else seed
        for (part, _), answer, rubric in zip(qs, answers, rubrics):
            length = answer[2] if answer_tokens is None else answer_tokens
            self.led.ask(self.stage, JUDGE, ("judge", seed, variant, answer[:2], rubric),
                         template_tokens("decoevo_judge") + self.tok.q(part) + length + self.tok.rubric,
                         self.tok.verdicts)

    def grade(self, qs: list, answers: list[tuple]) -> None:
        """The gold grader (the backbone or roles.grader.model) on held-out answers."""
        seed = seed_of(self.config.roles.grader.sampling, self.seed)
        for (part, _), answer in zip(qs, answers):
            self.led.ask(self.stage, GRADER, ("grade", seed, answer[:2]), template_tokens("judge_gold_rubric")
                         + self.tok.q(part) + answer[2] + self.tok.data.gold, self.tok.grade)

    def structural(self, qs: list, rubrics: list[tuple]) -> None:
        if self.config.roles.auditor.structural_scorer is not None:  # code audits: no model call
            return
        seed = seed_of(self.config.roles.auditor.sampling, self.seed)
        for (part, _), rubric in zip(qs, rubrics):
            self.led.ask(self.stage, STRUCTURAL, ("structural", seed, rubric),
                         template_tokens("decoevo_structural_auditor") + self.tok.spec + self.tok.q(part)
                         + self.tok.rubric, self.tok.structural)

    def rewrite(self, role: str, skill: tuple, step: int, lines: int) -> tuple:
        """One rewriter call; its candidate, named by what it was made from."""
        template = "decoevo_solver_rewriter" if role == S_REWRITER else "decoevo_generator_rewriter"
        key = (role, self.seed, step, self.S, self.G)
        self.led.ask(self.stage, role, key, template_tokens(template) + self.tok.skill(skill) + lines,
                     self.tok.rewrite)
        return (skill[0], *key)

    # -- the loop's pieces (loop.py, same names) -------------------------------------------
    def near_ties(self, qs: list, rubrics: list[tuple]) -> list[tuple]:
        """m rollouts per question, judged; the near-tie pairs' blind verdicts (all kept)."""
        m, sampling = self.config.m, self.config.roles.auditor.sampling
        rollouts = self.solve(qs, self.S, n=m, rollout=True)
        for q, group, rubric in zip(qs, rollouts, rubrics):
            self.judge([q] * m, group, [rubric] * m)
        pairs = [(q, group[2 * p], group[2 * p + 1], rubric) for q, group, rubric in zip(qs, rollouts, rubrics)
                 for p in range(m // 2)][: self.config.max_pairs]
        blind_by_code = self.config.roles.auditor.preference_scorer is not None  # no model call then
        for (part, _), a, b, _ in [] if blind_by_code else pairs:
            self.led.ask(self.stage, CONTRASTIVE, ("blind", seed_of(sampling, self.seed), a[:2], b[:2]),
                         template_tokens("decoevo_contrastive_blind") + self.tok.q(part) + 2 * self.tok.rollout,
                         self.tok.blind)
        return pairs

    def contrastive_audit(self, qs: list, rubrics: list[tuple]) -> int:
        """Stage 2 on every kept pair (continuing stage 1's conversation); the records made."""
        pairs, sampling = self.near_ties(qs, rubrics), self.config.roles.auditor.sampling
        blind = template_tokens("decoevo_contrastive_blind") + 2 * self.tok.rollout + self.tok.blind
        for (part, _), a, b, rubric in pairs:
            self.led.ask(self.stage, CONTRASTIVE, ("explain", seed_of(sampling, self.seed), a[:2], b[:2], rubric),
                         blind + self.tok.q(part) + template_tokens("decoevo_contrastive_rubric")
                         + self.tok.rubric + self.tok.verdicts, self.tok.explained)
        return len(pairs)

    def inner_step(self, step: int) -> bool:
        """propose_solver, then SolverGatePolicy; whether S' was taken."""
        train = self.questions("train")
        picked = random.Random(f"{self.seed}:{step}").sample(range(len(train)),
                                                             min(self.config.batch_size, len(train)))
        batch = [train[i] for i in picked]  # the loop's own draw: same (seed, step), same batch
        answers = [group[0] for group in self.solve(batch, self.S)]
        self.judge(batch, answers, self.rubrics(batch, self.G))
        if not self.path.unmet_criteria:
            return False  # nothing to rewrite: a stall
        candidate = self.rewrite(S_REWRITER, self.S, step, self.tok.failures(len(batch)))
        gate = self.questions("solver_gate")
        rubrics = self.rubrics(gate, self.G)
        n = self.config.gate_samples  # answers per gate question per skill
        for skill in (self.S, candidate):
            for group in zip(*self.solve(gate, skill, n=n)):
                self.judge(gate, list(group), rubrics)
        if self.path.accept_solver:
            self.S = candidate
        return self.path.accept_solver

    def outer_step(self, step: int) -> None:
        """propose_generator, then the method's rule on the generator gate."""
        probe = self.questions("probe")
        rubrics = self.rubrics(probe, self.G)
        self.structural(probe, rubrics)
        records = len(probe) + self.contrastive_audit(probe, rubrics)
        candidate = self.rewrite(G_REWRITER, self.G, step, self.tok.audit_lines(records))
        gate = self.questions("generator_gate")
        old, new = self.rubrics(gate, self.G), self.rubrics(gate, candidate)
        if self.outer == "sc_coevo":  # ScoreCoupledPolicy: S's gate answers under both rubric sets
            answers = [group[0] for group in self.solve(gate, self.S)]
            self.judge(gate, answers, old)
            self.judge(gate, answers, new)
        else:  # DecoupledAuditPolicy: adequacy of both, resolution on the frozen near-ties
            self.structural(gate, old)
            self.structural(gate, new)
            for q, a, b, _ in self.near_ties(gate, old):
                self.judge([q, q], [a, b], [new[gate.index(q)]] * 2)  # under G: the near-ties' own
        if self.path.accept_coupled if self.outer == "sc_coevo" else self.path.accept_generator:
            self.G = candidate

    def diagnose(self) -> None:
        """A trajectory point: the diagnostic answers, judged under G and graded on gold."""
        diag = self.questions("diagnostic")
        if diag:
            answers = [group[0] for group in self.solve(diag, self.S)]
            self.judge(diag, answers, self.rubrics(diag, self.G))
            self.grade(diag, answers)

    def audit_round(self, step: int) -> None:
        """decoevo/audit.py's round: the judge audit's passes, G's drift, the gold grades."""
        audit = self.config.audit
        held = (self.questions("diagnostic") + self.questions("test"))[: audit.prompts]
        if not (audit.enabled and held):
            return
        answers = [group[0] for group in self.solve(held, self.S)]
        rubrics = self.rubrics(held, self.G)
        first = self.judge_seed if self.judge_seed is not None else self.seed
        # One batched pass over the real answers and every variant (audit/judge_audit.py).
        self.judge(held, answers, rubrics, first)
        for probe in MASTER_KEYS:  # gold_rubric judges the empty answer too
            for q, rubric in zip(held, rubrics):
                length = self.tok.q(q[0]) if probe.text == PROMPT_FIELD else text_tokens(probe.text)
                self.judge([q], [(("probe", probe.name, q), 0, length)], [rubric], first)
        for variant, extra in (("padding", PADDING), ("injection", INJECTIONS["y0"])):
            self.judge(held, answers, rubrics, first, variant, self.tok.answer + text_tokens(extra))
        self.judge(held, answers, rubrics, first + 1 + self.seed)  # the retest's second pass
        self.judge(held, answers, rubrics)  # the drift: G's grades now ...
        if step > 0:
            self.judge(held, answers, self.rubrics(held, ("G",)))  # ... and G0's
        self.grade(held, answers)

    def test(self) -> None:
        self.stage = TEST
        test = self.questions("test")
        self.grade(test, [group[0] for group in self.solve(test, self.S)])
        self.stage = STAGE

    def run(self) -> None:
        """MethodRun.run: T inner steps, an outer step when due, diagnostics, audits, test."""
        config, last = self.config, self.config.inner_steps
        stall = since = 0
        self.diagnose()
        self.audit_round(0)
        for step in range(1, last + 1):
            if self.inner:
                stall = 0 if self.inner_step(step) else stall + 1
            since += 1
            outer = bool(self.outer) and step < last and (since >= config.k or stall >= config.s)
            if outer:
                self.outer_step(step)
                since = stall = 0
            self.diagnose()
            if outer:
                self.audit_round(step)
        self.test()


def count_calls(config: Any, plan: Any, path: ExpectedPath = ExpectedPath()) -> tuple[list[CallEstimate], list[str]]:
    """The run's model calls per (stage, role), and the notes on what was guessed or left out."""
    notes = path_notes(path)
    parts = _partitions(config, plan)
    if parts is None:
        notes.insert(0, f"the data ({config.data.source}) is not on this machine: only the rewriters' calls, "
                        "which ask no question, are counted (one per inner step and one per outer step, per "
                        "method and seed), without the questions in their failure lines")
        data = Data(sizes={}, question={})
    else:
        data = Data.of(parts)
    ledger, tokens = Ledger(), Tokens(config, data)
    for seed in config.seeds:
        for method in config.methods:
            counted = MethodCount(ledger, tokens, config, seed, method, path)
            counted.run() if parts is not None else _rewriters_only(counted)
    if config.data.filter_queries:
        notes.append("data.filter_queries: the query filter's backbone call per row before partitioning is not counted")
    if config.audit.gate:
        notes.append("audit.gate: the audit of each accepted rubric-generator candidate (about a dozen judge "
                     "calls per audited question) is not counted")
    if config.audit.probes:
        notes.append("audit.probes: the probes file's master keys (one judge call per probe and audited "
                     "question per audit round) are not counted")
    spec = config.roles.backbone.model
    return ledger.estimates(spec, config.roles.grader.model or spec), notes


def _partitions(config: Any, plan: Any) -> dict[str, list] | None:
    """The run's partitions (samples), as the loop makes them; None without the data."""
    from coevo.algorithms.decoevo.data import make_partitions
    from coevo.tasks.loaders import load_samples

    if not (plan.data or {}).get("sizes"):
        return None
    samples = load_samples(config.data.source, columns=config.data.columns or None, limit=config.data.limit)
    return make_partitions(samples, config.partitions)


def _rewriters_only(counted: MethodCount) -> None:
    """Without data: the rewriter calls of the expected path (they read the skill and the
    audit records, not a question the estimate could measure)."""
    config, path, stall, since = counted.config, counted.path, 0, 0
    for step in range(1, config.inner_steps + 1):
        if counted.inner:
            if path.unmet_criteria:
                candidate = counted.rewrite(S_REWRITER, counted.S, step, counted.tok.failures(config.batch_size))
                counted.S = candidate if path.accept_solver else counted.S
            stall = 0 if path.accept_solver and path.unmet_criteria else stall + 1
        since += 1
        if counted.outer and step < config.inner_steps and (since >= config.k or stall >= config.s):
            candidate = counted.rewrite(G_REWRITER, counted.G, step, 0)
            accept = path.accept_coupled if counted.outer == "sc_coevo" else path.accept_generator
            counted.G = candidate if accept else counted.G
            since = stall = 0
