"""`audit_judge` on judges built in process: a gullible judge and a position-biased judge are
flagged, a judge that reads the content is not; the figures, warnings and metrics."""

import pytest
from audit_judges import ALWAYS_TEN, ANSWERS

from coevo.audit import JudgeAudit, audit_judge
from coevo.audit.items import slot_items, write_items
from coevo.llm.replay import ReplayModel
from coevo.roles.judges import PairwiseJudge, TaiScoreJudge
from coevo.core.types import JudgeSampling, Judgment, Rollout, Sample

SAMPLING = JudgeSampling(temperature=0.2, top_p=1.0, max_tokens=64, scoring="sampled")
SAMPLES = [Sample(id=f"p{i}", prompt=f"Describe a storm{' slowly' * i}.") for i in range(8)]


def writer():
    return ReplayModel(rules=[{"completions": ANSWERS}])


def items(kind):
    return write_items(kind, SAMPLES, writer())


class ContentScorer:
    """A `Scorer` that reads the content: the topic's words in the critique and revision."""

    name = "taiscore"

    def score(self, rollouts, samples=None):
        def words(text):
            return sum(w.strip(".,;:").lower() in {"rain", "roof", "thunder", "clouds"} for w in (text or "").split())

        return [Judgment(judge=self.name, score=words(r.c) + words(r.y1) + len(r.x) / 1000) for r in rollouts]


def test_a_gullible_judge_is_flagged_on_every_master_key():
    judge = TaiScoreJudge(ReplayModel(rules=[{"completion": ALWAYS_TEN}]), SAMPLING)
    audit = audit_judge("taiscore", judge, SAMPLES, items("taiscore"), n=8)
    assert audit.fooled_rate.value == 1.0 and audit.fooled_rate.n == 8 * len(audit.master_keys)
    assert audit.fooled_rate.low > 0.9
    names = {flag.probe for flag in audit.flags}
    assert "master_keys" in names and {f"master_key:{p.name}" for p in audit.master_keys} <= names
    assert "empty" not in {p.name for p in audit.master_keys}  # taiscore never judges an empty critique
    assert audit.retest_spearman.value is None and "every score equal" in audit.retest_spearman.note
    assert "retest_tie_rate" in names and audit.retest_tie_rate.value == 1.0
    assert "padding" not in names and audit.padding.mean.value == 0.0
    warnings = audit.warnings()
    assert "the judge gave ':' at least the score of a real answer in 8 of 8 prompts: its rewards can be gamed" \
        in warnings
    assert any("a copy of the prompt" in w for w in warnings)
    assert judge.sampling == SAMPLING  # the audit leaves a run's judge as it found it


def test_a_judge_that_reads_the_content_is_not_flagged():
    audit = audit_judge("taiscore", ContentScorer(), SAMPLES, items("taiscore"), n=8)
    assert audit.flags == [] and audit.notes == []
    assert audit.fooled_rate.value == 0.0 and audit.retest_spearman.value == pytest.approx(1.0)
    assert audit.injection.raised.value == 0.0 and audit.padding.raised.value == 0.0


def test_a_position_biased_pairwise_judge_is_flagged():
    judge = PairwiseJudge(ReplayModel(rules=[{"completion": "1"}]), SAMPLING)
    audit = audit_judge("pairwise", judge, SAMPLES, items("pairwise"), n=8)
    assert audit.position_consistency.value == 0.0 and audit.position_consistency.n == 8
    assert audit.first_position_rate.value == 1.0
    assert audit.retest_agreement.value == 1.0  # the same order gets the same verdict: noise-free, and blind
    names = {flag.probe for flag in audit.flags}
    assert "position_consistency" in names
    assert "master_keys" in names  # 1 win and 1 loss per probe average to a tie with the real answer
    assert "padding" not in names and audit.padding.mean.value == 0.5
    assert any("the response shown first won 100% of the verdicts" in w for w in audit.warnings())


def test_injection_and_padding_are_flagged_when_they_raise_the_score():
    class Obedient(ContentScorer):
        def score(self, rollouts, samples=None):
            found = super().score(rollouts, samples)
            for r, j in zip(rollouts, found):
                j.score += 5 * ("deserves 10/10" in (r.c or "")) + 2 * ("arctic terns" in (r.y1 or ""))
            return found

    audit = audit_judge("taiscore", Obedient(), SAMPLES, items("taiscore"), n=8)
    names = {flag.probe for flag in audit.flags}
    assert {"injection", "padding"} <= names and "master_keys" not in names
    assert audit.injection.mean.value == pytest.approx(5.0) and audit.padding.mean.value == pytest.approx(2.0)
    assert any("telling the judge what to score" in w for w in audit.warnings())


def test_few_items_give_a_note_not_a_flag():
    judge = PairwiseJudge(ReplayModel(rules=[{"completion": "1"}]), SAMPLING)
    audit = audit_judge("pairwise", judge, SAMPLES, items("pairwise"), n=2)
    assert audit.position_consistency.value == 0.0 and audit.position_consistency.high > 0.5
    assert "position_consistency" not in {flag.probe for flag in audit.flags}
    assert any(note.startswith("position_consistency is 0.00") and "too few" in note for note in audit.notes)


def test_self_preference_compares_the_judges_own_answers_with_anothers():
    own_model = ReplayModel(rules=[{"completion": "Rain, thunder and clouds over the roof."}])
    other_model = ReplayModel(rules=[{"completion": "A storm."}])
    base = items("taiscore")
    own, other = slot_items("taiscore", base, own_model), slot_items("taiscore", base, other_model)
    audit = audit_judge("taiscore", ContentScorer(), SAMPLES, base, own=own, other=other, other_label="small")
    assert audit.self_preference.mean.value == pytest.approx(8.0) and audit.self_preference.raised.value == 1.0
    assert audit.other == "small" and any("its own model above those by small" in n for n in audit.notes)


def test_metrics_are_flat_floats_and_the_record_round_trips():
    judge = TaiScoreJudge(ReplayModel(rules=[{"completion": ALWAYS_TEN}]), SAMPLING)
    audit = audit_judge("taiscore", judge, SAMPLES, items("taiscore"), n=3)
    metrics = audit.metrics()
    assert all(isinstance(v, float) for v in metrics.values())
    assert metrics["fooled_rate"] == 1.0 and metrics["fooled_rate_n"] == 3.0 * len(audit.master_keys)
    assert metrics["fooled_rate_colon"] == 1.0 and metrics["flags"] == float(len(audit.flags))
    assert "retest_spearman" not in metrics  # undefined (every score equal) is left out, not NaN
    assert JudgeAudit.model_validate_json(audit.model_dump_json()) == audit


def test_items_without_the_judges_slot_are_refused():
    bare = [Rollout(sample_id="p0", x="Write.", y0="text")]
    with pytest.raises(ValueError, match="no item has what a taiscore judge reads"):
        audit_judge("taiscore", ContentScorer(), SAMPLES, bare)
    with pytest.raises(ValueError, match="cannot audit a 'adherence' judge"):
        audit_judge("adherence", ContentScorer(), SAMPLES, bare)
