"""The viewer's sample-level pages: samples list and one sample, RLAC proposals, DecoEvo skills.

Run folders come two ways: through the store API, shaped like a TAIScore run (GRPO rollouts
saved without a round, unreadable judgments, rewards, cached calls with their requests), and
from real replay runs of `coevo run` (controls, RLAC, DecoEvo; `run_folders` in conftest.py),
so the pages read what the algorithms store. Expected values come from the store, not from
the page code.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from coevo.rundir.store import RunStore, stage_round
from coevo.core.types import Completion, Judgment, Rollout
from coevo.view.app import create_app
from coevo.view.samples import word_diff

CRITIC_PROMPT = "Critique this response to {x}: {y0}"


def _judgment(name: str, score: float | None, reward: float | None = None, **extra) -> Judgment:
    if score is None:
        return Judgment(judge=name, valid=False, raw="I cannot say.", error="no score in the answer",
                        reward=reward)
    return Judgment(judge=name, score=score, reward=reward, raw=f"score {score}",
                    scores={"uptake": score, "faithfulness": score - 1},
                    reasons={"uptake": f"uptake reason {score}", "faithfulness": "stays on the prompt"}, **extra)


def make_taiscore_shaped_run(run_dir: Path) -> Path:
    """Round 1 and 2 GRPO groups (no round column; sample ids `q#digest`), a pair pool with
    the pairwise judge, held-out eval rollouts with a round and S(y0)/S(y1), and the cached
    calls of one rollout (and another call that gave the same critique to another prompt)."""
    store = RunStore(run_dir)
    store.set_meta("config", {"algorithm": "taiscore"})
    store.set_meta("algorithm", "taiscore")
    store.set_meta("status", "finished")
    rewards = {1: [7.0, 3.0, None, 5.0], 2: [9.0, 6.0, 2.0, None]}
    for r, values in rewards.items():
        for i, value in enumerate(values):
            rollout = Rollout(sample_id=f"q{r}#{i:04x}", x=f"Explain tides, round {r}.", y0="Tides move.",
                              c=f"critique {r}.{i}: say why the moon matters", y1=f"Tides move because of the moon ({r}.{i}).",
                              condition="grpo",
                              judgments={"taiscore": _judgment("taiscore", value, reward=value if value is not None else 0.0)})
            store.save_rollout(f"coevolution/round{r}/grpo", rollout)
    pool = Rollout(sample_id="p1", x="Name a planet.", y0="Mars is red planet", c="Fix the grammar.",
                   y1="Mars is the red planet.", condition="coevolution",
                   judgments={"pairwise": Judgment(judge="pairwise", score=1.0, scores={"preference": 1.0},
                                                   reasons={"shown_order": "second, first", "answer": "1"},
                                                   shown_order=["second", "first"], winner="second")})
    store.save_rollout("coevolution/round1/pool0", pool)
    for i in range(3):
        rollout = Rollout(sample_id=f"e{i}", x=f"Held-out prompt {i}.", y0=f"first answer {i}",
                          c=f"eval critique {i}", y1=f"better answer {i}", condition="coevolution",
                          judgments={"gold_rubric_y0": _judgment("gold_rubric", 4.0 + i),
                                     "gold_rubric": _judgment("gold_rubric", 6.0 + i)})
        store.save_rollout("coevolution/round2/eval", rollout, round=2)
    # The calls behind pool rollout p1: the actor's y0 and y1, the critic's critique; and a
    # call to another prompt that gave the same critique text (it must not be shown as p1's).
    calls = [("Name a planet.", "Mars is red planet", 0.8),
             (CRITIC_PROMPT.format(x="Name a planet.", y0="Mars is red planet"), "Fix the grammar.", 0.8),
             (CRITIC_PROMPT.format(x="Name a colour.", y0="Blue"), "Fix the grammar.", 0.8),
             ("Revise: Name a planet. / Mars is red planet / Fix the grammar.", "Mars is the red planet.", 0.2)]
    for n, (prompt, answer, temperature) in enumerate(calls):
        store.cache_put(f"key{n}", "replay:test", {0: Completion(text=answer)},
                        request={"messages": [{"role": "user", "content": prompt}],
                                 "sampling": {"temperature": temperature, "max_tokens": 64}})
    store.close()
    return run_dir


@pytest.fixture(scope="module")
def tai(tmp_path_factory):
    run = make_taiscore_shaped_run(tmp_path_factory.mktemp("tai") / "tai")
    app = create_app([run])
    [ref] = app.state.runs.runs()
    return TestClient(app), ref.id, run


def _row_ids(page: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr class="sample-row" data-id="(\d+)">', page)]


def _text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_the_list_holds_every_rollout_of_every_stage(tai):
    client, run_id, run = tai
    page = client.get(f"/runs/{run_id}/samples")
    assert page.status_code == 200 and "<h1>Samples</h1>" in page.text
    store = RunStore(run, read_only=True)
    rows = store.rollout_rows()
    store.close()
    assert _row_ids(page.text) == [row["id"] for row in rows] and len(rows) == 12
    assert 'id="samples-table"' in page.text and 'id="samples-filters"' in page.text


def test_filters_by_stage_round_validity_and_score(tai):
    client, run_id, run = tai
    store = RunStore(run, read_only=True)
    rows = store.rollout_rows()
    store.close()
    by_stage = {}
    for row in rows:
        by_stage.setdefault(row["stage"], []).append(row["id"])

    def ids(query: str) -> list[int]:
        page = client.get(f"/runs/{run_id}/samples?{query}")
        assert page.status_code == 200, page.text
        return _row_ids(page.text)

    assert ids("stage=coevolution/round2/eval") == by_stage["coevolution/round2/eval"]
    # GRPO rollouts carry no round: it comes from the stage's name.
    assert ids("round=1") == by_stage["coevolution/round1/grpo"] + by_stage["coevolution/round1/pool0"]
    assert ids("round=2") == by_stage["coevolution/round2/grpo"] + by_stage["coevolution/round2/eval"]
    invalid = [row["id"] for row in rows if any(not j.valid for j in row["rollout"].judgments.values())]
    assert ids("validity=invalid") == invalid and len(invalid) == 2
    assert ids("validity=valid") == [i for i in by_stage_all(rows) if i not in invalid]
    # Score range on one judge: taiscore scores 5..7 are 7.0, 5.0 (round 1) and 6.0 (round 2).
    wanted = [row["id"] for row in rows if "taiscore" in row["rollout"].judgments
              and row["rollout"].judgments["taiscore"].score is not None
              and 5 <= row["rollout"].judgments["taiscore"].score <= 7]
    assert ids("judge=taiscore&score_min=5&score_max=7") == wanted and len(wanted) == 3
    assert ids("judge=gold_rubric&score_min=7.5") == by_stage["coevolution/round2/eval"][2:]


def by_stage_all(rows):
    return [row["id"] for row in rows]


def test_sorts_by_reward_and_score_with_unknowns_last(tai):
    client, run_id, run = tai
    store = RunStore(run, read_only=True)
    rows = store.rollout_rows("coevolution/round1/grpo") + store.rollout_rows("coevolution/round2/grpo")
    store.close()
    rewards = {row["id"]: row["rollout"].judgments["taiscore"].reward for row in rows}
    page = client.get(f"/runs/{run_id}/samples?sort=reward&order=desc")
    listed = [i for i in _row_ids(page.text) if i in rewards]
    assert [rewards[i] for i in listed] == sorted(rewards.values(), reverse=True)
    scores = client.get(f"/runs/{run_id}/samples?judge=taiscore&sort=score&order=asc")
    ordered = _row_ids(scores.text)
    known = [i for i in ordered if rows_score(rows, i) is not None]
    assert [rows_score(rows, i) for i in known] == [2.0, 3.0, 5.0, 6.0, 7.0, 9.0]
    assert ordered[:6] == known and len(ordered) == 8  # the two unreadable ones last


def rows_score(rows, rid):
    return next(row["rollout"].judgments["taiscore"].score for row in rows if row["id"] == rid)


@pytest.mark.parametrize("query, words", [("round=two", "round must be a number"),
                                          ("score_min=x", "score_min must be a number"),
                                          ("validity=maybe", "validity must be"), ("sort=length", "sort must be")])
def test_bad_filters_are_refused_naming_the_parameter(tai, query, words):
    client, run_id, _ = tai
    page = client.get(f"/runs/{run_id}/samples?{query}")
    assert page.status_code == 400 and words in page.text


def test_one_sample_side_by_side_with_diff_judges_and_its_calls(tai):
    client, run_id, run = tai
    store = RunStore(run, read_only=True)
    [row] = store.rollout_rows("coevolution/round1/pool0")
    store.close()
    page = client.get(f"/runs/{run_id}/samples/{row['id']}")
    assert page.status_code == 200
    text = page.text
    for element in ("text-x", "text-y0", "text-c", "text-y1", "sample-diff", "judges-table", "sample-calls"):
        assert f'id="{element}"' in text, element
    diff = re.search(r'<div class="diff" id="sample-diff">(.*?)</div>', text, re.DOTALL).group(1)
    assert "<ins>the </ins>" in diff and "<del>" not in diff and "<ins>.</ins>" in diff
    # The pairwise judge's verdict and its extra fields (shown order, winner).
    assert "shown_order" in text and "second, first" in text and "winner" in text
    # Calls: the actor's y0 call, the critic's call on THIS prompt (not the one on another
    # prompt that gave the same critique), the revision call, each with request and answer.
    calls = text.split('id="sample-calls"')[1].split('id="related-table"')[0]
    assert "Critique this response to Name a planet." in html.unescape(calls)
    assert "Name a colour." not in html.unescape(calls)
    assert "Revise: Name a planet." in html.unescape(calls) and "temperature 0.2" in calls
    assert client.get(f"/runs/{run_id}/samples/99999").status_code == 404


def test_per_criterion_scores_and_reasons_and_invalid_judgments(tai):
    client, run_id, run = tai
    store = RunStore(run, read_only=True)
    rows = store.rollout_rows("coevolution/round2/eval") + store.rollout_rows("coevolution/round1/grpo")
    store.close()
    eval_page = _text(client.get(f"/runs/{run_id}/samples/{rows[1]['id']}").text)
    assert "uptake reason 7.0" in eval_page and "uptake reason 5.0" in eval_page  # y1's and y0's judge
    assert "stays on the prompt" in eval_page and "round 2" in eval_page
    unreadable = next(r for r in rows if not r["rollout"].judgments.get("taiscore", Judgment(judge="t")).valid)
    page = client.get(f"/runs/{run_id}/samples/{unreadable['id']}").text
    assert "no score in the answer" in page and "I cannot say." in page
    assert "round <b>1</b>" in page  # from the stage name


def test_word_diff_joins_back_into_both_texts():
    old, new = "The cat sat on the mat.\nIt purred.", "The black cat sat on a mat!\nIt purred loudly."
    pieces = word_diff(old, new)
    assert "".join(t for op, t in pieces if op != "insert") == old
    assert "".join(t for op, t in pieces if op != "delete") == new
    assert ("insert", "black ") in pieces or ("insert", " black") in pieces
    assert word_diff("same", "same") == [("equal", "same")]


def test_round_comes_from_the_column_or_the_stage_name():
    assert stage_round("coevolution/round3/grpo", None) == 3
    assert stage_round("coevolution/round3/eval", 5) == 5
    assert stage_round("controls", None) is None


# ─── real replay runs ─────────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def replay(run_folders, runs_root):
    app = create_app([runs_root])
    client = TestClient(app)
    ids = {ref.path.name: ref.id for ref in app.state.runs.runs()}
    return client, ids, run_folders


def test_controls_replay_run_samples_and_an_unreadable_judgment(replay):
    client, ids, folders = replay
    store = RunStore(folders["controls"], read_only=True)
    rows = store.rollout_rows()
    store.close()
    page = client.get(f"/runs/{ids['controls']}/samples")
    assert _row_ids(page.text) == [row["id"] for row in rows]
    invalid = [row["id"] for row in rows if any(not j.valid for j in row["rollout"].judgments.values())]
    assert invalid and _row_ids(client.get(f"/runs/{ids['controls']}/samples?validity=invalid").text) == invalid
    conditions = {row["rollout"].condition for row in rows}
    for condition in conditions:
        listed = _row_ids(client.get(f"/runs/{ids['controls']}/samples?condition={condition}").text)
        assert listed == [row["id"] for row in rows if row["rollout"].condition == condition]
    one = rows[-1]
    sample = client.get(f"/runs/{ids['controls']}/samples/{one['id']}").text
    assert one["rollout"].judgments  # each judge's verdict and reasons are checked on the page below
    for name, judgment in one["rollout"].judgments.items():
        assert f'id="judge-{name}"' in sample
        for reason in judgment.reasons.values():
            assert html.escape(reason, quote=True) in sample or html.escape(reason) in sample
    assert 'class="call"' in sample  # the replay calls behind it, from the cache


def test_rlac_proposals_page_shows_verdicts_evidence_and_the_calls_plot(replay):
    client, ids, folders = replay
    store = RunStore(folders["rlac"], read_only=True)
    records = [record for _, record in store.get_records("rlac_proposal")]
    store.close()
    assert records
    page = client.get(f"/runs/{ids['rlac']}/proposals")
    assert page.status_code == 200 and "<h1>" in page.text
    assert 'id="plot-verification"' in page.text and 'class="plot"' in page.text
    assert page.text.count('class="proposal"') == len(records)
    counts = re.search(r'<table id="verdict-counts".*?</table>', page.text, re.DOTALL).group(0)
    for rnd in sorted({r["round"] for r in records}):
        row = [r for r in records if r["round"] == rnd]
        cells = re.search(rf"<tr><td>{rnd}</td><td>{len(row)}</td>(.*?)</tr>", counts).group(1)
        for verdict in ("caught", "survived", "invalid"):
            assert f"<td>{sum(r['verdict'] == verdict for r in row)} (" in cells
    for verdict in ("caught", "survived", "invalid"):
        filtered = client.get(f"/runs/{ids['rlac']}/proposals?verdict={verdict}").text
        assert filtered.count('class="proposal"') == sum(r["verdict"] == verdict for r in records)
        assert set(re.findall(r'data-verdict="(\w+)"', filtered)) <= {verdict}
    # A verified fact shows the passages the validator retrieved; a refused one its reason.
    verified = next(r for r in records if r["details"].get("passages"))
    assert html.escape(verified["details"]["passages"][0][:60]) in page.text
    refused = next(r for r in records if r["verdict"] == "invalid")
    assert html.escape(refused["reason"]) in page.text
    last_round = max(r["round"] for r in records)
    assert client.get(f"/runs/{ids['rlac']}/proposals?round={last_round}").text.count('class="proposal"') == \
        sum(r["round"] == last_round for r in records)
    assert client.get(f"/runs/{ids['rlac']}/proposals?verdict=maybe").status_code == 400


def test_decoevo_skills_page_shows_every_version_diff_and_the_trajectory(replay):
    from coevo.algorithms.decoevo.skills import versions

    client, ids, folders = replay
    store = RunStore(folders["decoevo"], read_only=True)
    recorded = versions(store)
    diag = [m for m in store.metrics() if m["name"] in ("diag_proxy", "diag_gold")]
    store.close()
    page = client.get(f"/runs/{ids['decoevo']}/skills")
    assert page.status_code == 200 and "<h1>" in page.text
    for v in recorded:
        assert f'id="version-{v.method}-seed{v.seed}-{v.name}-v{v.version}"' in page.text
    assert page.text.count('class="version"') == len(recorded)
    rejected = [v for v in recorded if v.decision == "rejected"]
    assert rejected, "the replay run refuses some candidates"
    filtered = client.get(f"/runs/{ids['decoevo']}/skills?decision=rejected").text
    assert filtered.count('class="version"') == len(rejected)
    assert html.escape(rejected[0].why, quote=True) in filtered or html.escape(rejected[0].why) in filtered
    changed = next(v for v in recorded if v.diff)
    added = next(line for line in changed.diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
    assert f'<span class="add">{html.escape(added)}</span>' in page.text
    assert 'id="plot-trajectory"' in page.text and diag
    table = re.search(r'<table id="trajectory-table".*?</table>', page.text, re.DOTALL).group(0)
    assert table.count("<tr>") - 1 == len({(m["stage"].split("/seed")[0], m["round"]) for m in diag})


def test_a_sample_links_its_other_rollouts_of_the_same_task_sample(tai):
    client, run_id, run = tai
    store = RunStore(run, read_only=True)
    group = store.rollout_rows("coevolution/round1/grpo")
    store.close()
    page = client.get(f"/runs/{run_id}/samples/{group[0]['id']}").text
    related = re.search(r'<table id="related-table".*?</table>', page, re.DOTALL).group(0)
    linked = [int(i) for i in re.findall(rf'href="/runs/{run_id}/samples/(\d+)"', related)]
    assert linked == [row["id"] for row in group[1:]]  # q1#0001.. of round 1, not round 2's q2#...
