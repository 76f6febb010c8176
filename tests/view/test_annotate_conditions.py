"""Human preference between two conditions (the TAIScore paper's Table 2, rows 2-3): pairs of
two conditions' final held-out answers to the same prompts, on one seeded sample of prompts
every comparison shares, labelled blind in the viewer and exported as a Table-2 table.

The runs are TAIScore-shaped stores (`TAG/roundR/eval` stages of replay rollouts) written
here; the expected counts and κ are worked out by hand, not by the export code.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from test_annotate import _label, _shown

from coevo.rundir.store import RunStore
from coevo.tasks.errors import DataError
from coevo.core.types import Rollout
from coevo.view.annotate import COOKIE
from coevo.view.annotate_export import condition_table, export_annotations
from coevo.view.annotate_conditions import ComparisonSpec, comparison_spec, run_comparisons, sample_prompts
from coevo.view.annotate_pairs import queue
from coevo.view.app import create_app

#: Each condition's last round, as the paper's runs: single-stage conditions one round,
#: co-evolution three; every one evaluates round 0 (the base actor) too.
ROUNDS = {"off_the_shelf": 1, "taiscore": 1, "coevolution": 3}
#: What an answer's text says of its condition: a letter, never the name.
CODE = {"off_the_shelf": "Q", "taiscore": "K", "coevolution": "W"}
SIDS = [f"p{i}" for i in range(8)]


def _answer(tag: str, r: int, sid: str) -> str:
    return f"Reply {CODE[tag.split('/')[0]]}{r} to prompt {sid}."


def _tai_run(run: Path, rounds: dict[str, int], sids: list[str] = SIDS, missing: dict[str, str] | None = None) -> Path:
    """A TAIScore-shaped run: per condition tag, `TAG/roundR/eval` for R = 0..last, one answer
    per sample id; `missing`: {tag: sample id} its last round did not answer (an empty y0)."""
    store = RunStore(run)
    store.set_meta("algorithm", "taiscore")
    for tag, last in rounds.items():
        for r in range(last + 1):
            for sid in sids:
                empty = r == last and (missing or {}).get(tag) == sid
                store.save_rollout(f"{tag}/round{r}/eval", Rollout(
                    sample_id=sid, x=f"Write about {sid}.", y0="  " if empty else _answer(tag, r, sid),
                    condition=tag.split("/")[0]), round=r)
    store.close()
    return run


def _comparisons(run: Path, spec: ComparisonSpec | None = None):
    store = RunStore(run, read_only=True)
    try:
        return run_comparisons(store, spec or ComparisonSpec())
    finally:
        store.close()


def _client(run: Path, annotator: str, spec: ComparisonSpec | None = None) -> tuple[TestClient, str]:
    app = create_app([run], spec)
    [ref] = app.state.runs.runs()
    client = TestClient(app)
    client.cookies.set(COOKIE, annotator, domain="testserver.local", path="/")
    return client, ref.id


def test_pairs_are_final_answers_of_two_conditions_matched_by_sample_id(tmp_path):
    run = _tai_run(tmp_path / "study", ROUNDS, missing={"off_the_shelf": "p3"})
    found = _comparisons(run)
    titles = {c.title: (c, pairs) for c, pairs in found.values()}
    # The paper's Table 2 rows, first-named first: vs the base actor, the off-the-shelf critic, co-evolution.
    assert set(titles) == {"taiscore vs taiscore/round0", "taiscore vs off_the_shelf", "coevolution vs taiscore"}
    comparison, pairs = titles["coevolution vs taiscore"]
    assert (comparison.first.stage, comparison.second.stage) == ("coevolution/round3/eval", "taiscore/round1/eval")
    for pair in pairs:
        sid = re.search(r"p\d", pair.x).group()
        assert pair.texts == (_answer("coevolution", 3, sid), _answer("taiscore", 1, sid))
        assert pair.candidates == ("coevolution", "taiscore") and pair.stage == comparison.id
    # p3 has no off-the-shelf answer: it is in no comparison, as every comparison shares its prompts.
    assert all(len(pairs) == 7 for _, pairs in found.values())
    assert not any("p3" in p.x for _, pairs in found.values() for p in pairs)
    assert all(re.fullmatch(r"comparison-[0-9a-f]{10}", cid) for cid in found)


def test_the_prompt_sample_is_seeded_and_the_same_for_every_comparison(tmp_path):
    run = _tai_run(tmp_path / "study", ROUNDS)
    spec = ComparisonSpec(prompts=3)
    prompts = [{re.search(r"p\d", p.x).group() for p in pairs} for _, pairs in _comparisons(run, spec).values()]
    assert len(prompts) == 3 and all(len(p) == 3 for p in prompts) and prompts[0] == prompts[1] == prompts[2]
    assert [{re.search(r"p\d", p.x).group() for p in pairs} for _, pairs in _comparisons(run, spec).values()] == prompts
    ids = [set(SIDS), set(SIDS) - {"p0"}]
    assert sample_prompts(ids, 3, seed=0) == sample_prompts(ids, 3, seed=0)
    assert set(sample_prompts(ids, 3, seed=0)) != set(sample_prompts(ids, 3, seed=1))  # another seed, another sample
    assert "p0" not in sample_prompts(ids, 8) and len(sample_prompts(ids, 50)) == 7  # fewer than asked: all shared


def test_an_explicit_pair_a_seed_tag_a_round_and_another_run(tmp_path):
    run = _tai_run(tmp_path / "a" / "study", {"taiscore/seed0": 1, "taiscore/seed1": 1})
    other = _tai_run(tmp_path / "b" / "other", {"off_the_shelf": 1, "coevolution": 2})
    spec = ComparisonSpec(pairs=(("taiscore/seed1", "taiscore/seed0/round0"),), asked=True)
    [(comparison, pairs)] = _comparisons(run, spec).values()
    assert comparison.title == "taiscore/seed1 vs taiscore/seed0/round0" and len(pairs) == len(SIDS)
    against = ComparisonSpec(pairs=(("taiscore/seed0", "off_the_shelf"),), against=other, asked=True)
    [(comparison, pairs)] = _comparisons(run, against).values()
    assert comparison.second.run == str(other) and pairs[0].candidates == ("taiscore/seed0", "other:off_the_shelf")
    sid = re.search(r"p\d", pairs[0].x).group()
    assert pairs[0].texts == (_answer("taiscore", 1, sid), _answer("off_the_shelf", 1, sid))
    # Unasked, against a run sharing no condition name: every condition of one against every one of the other.
    default = _comparisons(run, ComparisonSpec(against=other))
    assert len(default) == 4


@pytest.mark.parametrize(("make", "conditions", "against", "words"), [
    ({"taiscore": 1, "off_the_shelf": 1}, ["taiscore:critique_quality"], None,
     ("no condition 'critique_quality'", "its conditions: taiscore, off_the_shelf")),
    ({"taiscore": 1}, ["taiscore:off_the_shelf"], None, ("one condition (taiscore)", "--against OTHER_RUN")),
    ({"taiscore/seed0": 1, "taiscore/seed1": 1, "off_the_shelf/seed0": 1}, ["taiscore:off_the_shelf/seed0"], None,
     ("several seeds", "taiscore/seed0")),
    ({"taiscore": 1, "off_the_shelf": 1}, ["taiscore"], None, ("FIRST:SECOND",)),
    ({"taiscore": 1}, [], "notrun", ("--against", "is not a run folder")),
])
def test_bad_comparisons_end_in_one_line_naming_the_fix(tmp_path, make, conditions, against, words):
    run = _tai_run(tmp_path / "study", make)
    (tmp_path / "notrun").mkdir()
    with pytest.raises(DataError) as raised:
        comparison_spec(run, conditions, tmp_path / against if against else None)
    message = str(raised.value)
    assert "\n" not in message and all(word in message for word in words), message


def test_the_command_line_refuses_a_run_with_one_condition(tmp_path):
    run = _tai_run(tmp_path / "study", {"taiscore": 1})
    proc = subprocess.run([sys.executable, "-c", "from coevo.cli import main; main()", "view", str(run),
                           "--conditions", "taiscore:off_the_shelf", "--port", "0"],
                          capture_output=True, text=True, timeout=120, check=False)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "one condition (taiscore)" in lines[0], proc.stderr


def test_the_pages_never_name_a_condition(tmp_path):
    run = _tai_run(tmp_path / "study", ROUNDS)
    client, run_id = _client(run, "ann")
    overview = client.get(f"/runs/{run_id}/annotate").text
    batches = re.findall(r'<tr data-batch="(b-[0-9a-f]+)" data-kind="vs_condition">', overview)
    assert len(batches) == 3
    pages = [overview]
    for cid, (_, pairs) in _comparisons(run).items():
        for pair in queue(pairs)[:2]:
            # A researcher's link by comparison and pair key: redirected to the opaque url.
            answer = client.get(f"/runs/{run_id}/annotate?stage={cid}&kind=vs_condition&pair={quote(pair.key)}")
            query = str(answer.url).split("?")[1]
            assert re.fullmatch(r"batch=(b-[0-9a-f]+)&pair=p-[0-9a-f]+", query) and query[6:20] in batches, query
            pages.append(answer.text)
            shown = _shown(pages[-1])
            assert {shown["left_text"], shown["right_text"]} == set(pair.texts)
            assert _label(client, run_id, shown["token"], "A").status_code == 200
    review = client.get(f"/runs/{run_id}/annotate/review").text
    assert review.count("review-change") == 6 and "Write about p" in review  # the pairs are found again
    pages.append(review)
    for page in pages:
        # The run's header names its algorithm (taiscore, as one condition is named): not a side.
        below_header = page.split("<main>")[1]
        for name in (*ROUNDS, "round0", "round1", "round3", "comparison-", "vs_condition|"):
            assert name not in below_header, name
        assert "off_the_shelf" not in page and "coevolution" not in page


def _vote(client: TestClient, run_id: str, run: Path, pair, winner: str) -> None:
    """Label `pair` as preferring `winner` (a candidate, or "tie") on whichever side it was shown."""
    page = client.get(f"/runs/{run_id}/annotate?stage={pair.stage}&kind=vs_condition&pair={quote(pair.key)}").text
    shown = _shown(page, run)
    label = "tie" if winner == "tie" else "A" if shown["left"] == winner else "B"
    assert _label(client, run_id, shown["token"], label).status_code == 200


def test_three_annotators_majority_vote_no_majority_and_the_table(tmp_path):
    run = _tai_run(tmp_path / "study", ROUNDS)
    found = {c.title: (c, pairs) for c, pairs in _comparisons(run).values()}
    comparison, pairs = found["taiscore vs off_the_shelf"]
    pairs = queue(pairs)[:4]
    first, second = "taiscore", "off_the_shelf"
    # Per pair (alice, bob, carol): AAA -> first; ABA -> first; BB tie -> second; A B tie -> no majority.
    votes = {"alice": (first, first, second, first), "bob": (first, second, second, second),
             "carol": (first, first, "tie", "tie")}
    for name, winners in votes.items():
        client, run_id = _client(run, name)
        for pair, winner in zip(pairs, winners):
            _vote(client, run_id, run, pair, winner)
    result = export_annotations(run, tmp_path / "out")
    [row] = result["conditions"]
    assert row["comparison"] == "taiscore vs off_the_shelf" and row["id"] == comparison.id
    assert (row["first_wins"], row["ties"], row["second_wins"], row["no_majority"]) == (2, 0, 1, 1)
    assert row["pairs"] == 4 and row["annotators"] == ["alice", "bob", "carol"]
    # By hand: (first, second, tie) counts (3,0,0) (2,1,0) (0,2,1) (1,1,1): P-bar 5/12, P_e 7/18, kappa 1/22.
    assert row["kappa"] == pytest.approx(1 / 22, abs=1e-12)
    assert row["first_share"] == pytest.approx(2 / 3) and row["first_share_n"] == 3
    table = (tmp_path / "out" / "conditions.md").read_text()
    assert "| taiscore vs off_the_shelf | 2 | 0 | 1 | 1 | 4 | 0.05" in table and "n = 4 x 3" in table
    lines = [json.loads(line) for line in (tmp_path / "out" / "conditions.jsonl").read_text().splitlines()]
    assert lines == result["conditions"]
    proc = subprocess.run([sys.executable, "-c", "from coevo.cli import main; main()", "eval", "annotations",
                           str(run), "--out", str(tmp_path / "cli"), "--stage", comparison.id],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Table 2" in proc.stdout and "| taiscore vs off_the_shelf | 2 | 0 | 1 | 1 |" in proc.stdout


def test_one_annotators_table_has_no_kappa(tmp_path):
    run = _tai_run(tmp_path / "study", ROUNDS)
    comparison, pairs = next(iter(_comparisons(run).values()))
    client, run_id = _client(run, "solo")
    for pair, winner in zip(queue(pairs)[:3], (comparison.first.name, comparison.second.name, "tie")):
        _vote(client, run_id, run, pair, winner)
    [row] = export_annotations(run, tmp_path / "out")["conditions"]
    assert (row["first_wins"], row["ties"], row["second_wins"], row["no_majority"]) == (1, 1, 1, 0)
    assert row["kappa"] is None and "one annotator" in condition_table([row])
