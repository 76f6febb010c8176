"""RLAC's judge audit (issue 23; coevo/algorithms/rlac/audit.py) on replay models.

The facts validator's entailment judge is a replay model: a gullible one confirms every
claim that reaches it (every claim "not supported"), an honest one confirms only claims that name
a real wrong fact (here: a birthplace the person was not born in). The critic's real
proposals on the held-out outputs name such a fact, so both confirm them; only the gullible
judge also confirms a quote of a sentence nobody looked at.
"""

import pytest

from coevo.algorithms.rlac import run_rlac
from coevo.algorithms.rlac.audit import (
    AUDIT_PREFIX,
    CODE_NOTE,
    FACT_PROBES,
    RANDOM_NOTE,
    ValidatorScorer,
    fact_probes,
)
from coevo.algorithms.rlac.records import VerificationCounts
from coevo.algorithms.rlac.stages import round_stage
from coevo.rundir.store import RunStore
from coevo.core.types import Rollout, Sample, Verdict
from tests.algorithms.test_rlac_code import config as code_config
from tests.algorithms.test_rlac_code import trained  # noqa: F401  (fixture)
from tests.algorithms.test_rlac_loop import FACT_MODELS, INVALID, facts_config, fakes  # noqa: F401  (fixture)

CURIE_WRONG = "Marie Curie was born in Berlin. She discovered polonium and radium."
NEWTON_WRONG = "Isaac Newton was born in Vienna. He formulated the laws of motion."
CURIE_CLAIM = "reason: she was born in Warsaw\nsentence: 1\nerror_fact: Curie was born in Berlin."
NEWTON_CLAIM = "reason: he was born in Woolsthorpe\nsentence: 1\nerror_fact: Newton was born in Vienna."
YES, NO = '{"answer": "yes"}', '{"answer": "no"}'
SUPPORT = "against reference passages"  # in the fact_support prompt only

#: Every claim that reaches it is "not supported": every authentic claim is a confirmed failure.
GULLIBLE = [{"match": SUPPORT, "completion": NO}, {"completion": YES}]
#: Only the wrong birthplaces are unsupported (neither city is on these people's corpus pages).
HONEST = [{"match": [SUPPORT, "Vienna"], "completion": NO}, {"match": [SUPPORT, "Berlin"], "completion": NO},
          {"completion": YES}]


def audit_config(judge, **changes):
    return facts_config(**{"facts.judge": "llm", "roles.judge.model": judge, "audit.prompts": 2,
                           "data.heldout_ids": ["Marie Curie", "Isaac Newton"], **changes})


@pytest.fixture
def bios(fakes):  # noqa: F811
    """Held-out people whose outputs hold a wrong birthplace, a critic that names it, both judges."""
    fakes["models"]["gen"] = [*FACT_MODELS["gen"][:1],
                              {"match": "biography of Marie Curie", "completion": CURIE_WRONG},
                              {"match": "biography of Isaac Newton", "completion": NEWTON_WRONG}]
    fakes["models"]["crit"] = [*FACT_MODELS["crit"],
                               {"match": "[1] Marie Curie was born in Berlin.", "completions": [CURIE_CLAIM, INVALID]},
                               {"match": "[1] Isaac Newton was born in Vienna.", "completions": [NEWTON_CLAIM, INVALID]}]
    fakes["models"]["gullible"], fakes["models"]["honest"] = GULLIBLE, HONEST
    return fakes


def audit_key(r):
    return round_stage(r, prefix=AUDIT_PREFIX)


def records(summary, r):
    return [rec for rec in summary.audit if rec["round"] == audit_key(r)]


def test_a_gullible_entailment_judge_is_flagged_before_and_after_the_iteration(tmp_path, bios):
    store = RunStore(tmp_path)
    summary = run_rlac(audit_config("gullible"), store)
    for r in (0, 1):
        [record] = records(summary, r)
        assert record["judge_role"] == "validator" and record["kind"] == "critique_quality"
        assert [i["from"] for i in record["real_items"]] == ["heldout", "heldout"]
        fooled = {p["name"]: p["fooled"]["value"] for p in record["master_keys"]}
        # Raw master keys never parse as a proposal; claims without the sentence's words fail
        # the authenticity gate; a quote of an unexamined sentence is confirmed every time.
        assert fooled.pop("quote_other_sentence") == 1.0 and set(fooled.values()) == {0.0}
        [flag] = [f for f in record["flags"] if f["probe"] == "master_key:quote_other_sentence"]
        assert flag["why"].startswith("the validator confirmed a quote of a sentence the critic did not name")
    metrics = {(m["round"], m["name"]): m["value"] for m in store.metrics() if m["stage"] == "audit"}
    assert metrics[(0, "audit_validator_flags")] >= 1 and metrics[(1, "audit_validator_flags")] >= 1
    assert metrics[(1, "audit_validator_fooled_rate_quote_other_sentence")] == 1.0
    assert summary.rounds[0].audit["audit_validator_flags"] >= 1


def test_a_judge_that_confirms_only_real_wrong_facts_is_not_flagged(tmp_path, bios):
    summary = run_rlac(audit_config("honest"), RunStore(tmp_path))
    for r in (0, 1):
        [record] = records(summary, r)
        assert record["flags"] == [] and record["fooled_rate"]["value"] == 0.0
        assert record["fooled_rate"]["n"] == 2 * (7 + len(FACT_PROBES))  # 2 items x every probe
        assert record["retest_tie_rate"] is None  # every real item confirmed: ties by design, not measured
    assert summary.rounds[0].audit["audit_validator_flags"] == 0


def test_without_a_confirmed_held_out_proposal_the_iterations_own_are_the_real_items(tmp_path, bios):
    # Curie's biography is right: the critic's claim about it is rejected, so round 0 has no
    # confirmed failure to compare with (a note); after iteration 1 the loop's own confirmed
    # proposal on a train output stands in, checked by no new critic call.
    bios["models"]["gen"][1] = {"match": "biography of Marie Curie", "completion": "Marie Curie was born in Warsaw."}
    bios["models"]["crit"].append({"match": "[1] Marie Curie was born in Warsaw.",
                                   "completion": "sentence: 1\nerror_fact: Curie was born in Warsaw."})
    summary = run_rlac(audit_config("honest", **{"data.heldout_ids": ["Marie Curie"]}), RunStore(tmp_path))
    [before], [after] = records(summary, 0), records(summary, 1)
    assert "no real critic proposal" in before["note"] and "flags" not in before
    assert after["real_items"] == [{"sample_id": "bio:albert-einstein", "from": "train",
                                    "proposal": "reason: he was born in Ulm\nsentence: 2\nerror_fact: Einstein was "
                                                "born in Vienna."}]
    assert after["flags"] == [] and after["n_items"] == 1


def test_the_audit_leaves_the_verification_counts_as_they_are(tmp_path, bios):
    on = run_rlac(audit_config("gullible"), RunStore(tmp_path / "on"))
    off = run_rlac(audit_config("gullible", **{"audit.enabled": False}), RunStore(tmp_path / "off"))
    assert on.verification_calls == off.verification_calls == VerificationCounts(rlac=4, enumerative=6, used=4)
    assert on.verification_call_ratio == off.verification_call_ratio
    assert len(on.rounds) == len(off.rounds) == 1
    for a, b in zip(on.rounds, off.rounds):
        assert (a.counts, a.critic, a.pairs) == (b.counts, b.critic, b.pairs)
    assert off.audit == [] and off.rounds[0].audit == {}
    spent = on.rounds[0].audit
    # Counted apart: held-out proposals checked to find confirmed ones, then each probe.
    assert spent["audit_validator_calls"] > 0 and spent["audit_validator_llm_calls"] > 0
    assert records(on, 1)[0]["validator_calls"] == spent["audit_validator_calls"]


def test_a_code_run_records_once_that_it_has_nothing_to_audit(tmp_path, trained):  # noqa: F811
    store = RunStore(tmp_path)
    summary = run_rlac(code_config(), store)
    assert summary.audit == [{"round": audit_key(0), "judge_role": "validator", "kind": "code", "note": CODE_NOTE}]
    assert not [m for m in store.metrics() if m["name"].startswith("audit_")]
    assert summary.verification_calls.rlac == 2 * 4  # 4 proposals, each run on the reference and the output


def test_the_noisy_validator_ablation_is_not_audited(tmp_path, bios):
    summary = run_rlac(audit_config("gullible", validator="random"), RunStore(tmp_path))
    assert [(r["round"], r["note"]) for r in summary.audit] == [(audit_key(0), RANDOM_NOTE)]


def test_an_audit_that_cannot_run_is_a_record_with_its_error(tmp_path, fakes):  # noqa: F811
    # The loop fixture's critic has no answer for the held-out person: the run goes on.
    summary = run_rlac(facts_config(), RunStore(tmp_path))
    assert [r["round"] for r in summary.audit] == [audit_key(0), audit_key(1)]
    assert all("no answer" in r["error"] for r in summary.audit)
    assert summary.verification_calls == VerificationCounts(rlac=4, enumerative=6, used=4)


def test_the_quote_probe_names_a_sentence_the_real_proposal_does_not():
    class Run:
        class domain:
            @staticmethod
            def proposal(sample, output, text):
                from coevo.validators.facts import parse_fact_proposal
                return parse_fact_proposal(text)

        def check(self, items):
            self.seen = [p for _, _, p in items]
            return [Verdict(verdict="survived")] * len(items)

    run = Run()
    [paper, schema] = [{p.name: p for p in fact_probes(form)}["quote_other_sentence"] for form in ("paper", "schema")]
    sample = Sample(id="s", prompt="p")
    items = [Rollout(sample_id="s", x="p", y0="A was born in Ulm. A wrote \"many\" books. A died.", c=probe.text,
                     claim_sentence=named) for probe, named in ((paper, 1), (schema, 2))]
    judgments = ValidatorScorer(run).score(items, {"s": sample})
    assert [j.score for j in judgments] == [0.0, 0.0]
    assert [(p["sentence"], p["error_fact"]) for p in run.seen] == [(2, "A wrote many books"), (1, "A was born in Ulm")]


def test_the_plan_says_what_the_audit_costs(fakes):  # noqa: F811 - "gen", "crit": fake specs
    from coevo.algorithms.rlac.paper import plan

    [note] = [n for n in plan(audit_config("honest")).notes if n.startswith("judge audit")]
    assert "at most 30 validator calls per audit" in note  # 2 outputs x n=2, then 2 x (11 probes + 2)
    [code] = [n for n in plan(code_config()).notes if n.startswith("judge audit")]
    assert "nothing to audit" in code
    assert not [n for n in plan(audit_config("honest", **{"audit.enabled": False})).notes if "judge audit" in n]
