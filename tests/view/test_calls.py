"""Model calls filed where they belong: each cached call records who made it and in which
stage, the sample page files it there, and the samples list finds cut-off texts and words.

The run is a real replay run of `coevo run` (TAIScore with fake trainers, `build_taiscore`
in replay_runs.py) whose texts look alike across roles: one prompt where actor, critic and
revision all wrote "Fine.", one whose revision is its y0 word for word (the cause of the
bug: calls were found by their text), one whose revision ran into its token limit. What a
page shows is checked against what the store recorded for the very call it names by key.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient
from replay_runs import TAI_REVISION_LIMIT, TAI_TEXTS, build_taiscore

from coevo.rundir.store import RunStore
from coevo.core.types import Completion
from coevo.view.app import create_app
from coevo.view.calls import call_info, cut_off_shares

#: The step whose call makes each text of a rollout.
STEPS = {"initial response y0": ["respond"], "critique": ["critique"],
         "revision y1": ["revise", "revise_no_critique"]}


@pytest.fixture(scope="module")
def tai(tmp_path_factory):
    folder = tmp_path_factory.mktemp("calls")
    run = build_taiscore(folder / "runs" / "taiscore", folder / "inputs")
    app = create_app([run])
    [ref] = app.state.runs.runs()
    store = RunStore(run, read_only=True)
    yield TestClient(app), ref.id, store
    store.close()


class _Calls(HTMLParser):
    """The headings of a sample page's "Model calls" and the calls (key, index) under each."""

    def __init__(self):
        super().__init__()
        self.headings: list[dict] = []
        self._in_heading = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "h3" and "call-heading" in (a.get("class") or ""):
            self.headings.append({"role": a["data-role"], "stage": a["data-stage"], "label": a["data-label"],
                                  "text": "", "calls": []})
            self._in_heading = True
        elif tag == "div" and a.get("class") == "call":
            self.headings[-1]["calls"].append((a["data-key"], int(a["data-index"])))

    def handle_endtag(self, tag):
        if tag == "h3":
            self._in_heading = False

    def handle_data(self, data):
        if self._in_heading:
            self.headings[-1]["text"] += data


def headings_of(page: str) -> list[dict]:
    parser = _Calls()
    parser.feed(page[page.index('id="sample-calls"'):])
    return parser.headings


def _recorded(store: RunStore) -> dict[tuple[str, int], dict]:
    return {(call["key"], call["index"]): call for call in store.cached_calls(limit=None)}


def _text_of(rollout, label: str) -> str | None:
    fields = {"initial response y0": rollout.y0, "critique": rollout.c, "revision y1": rollout.y1}
    if label in fields:
        return fields[label]
    return rollout.judgments[label.removeprefix("judgment ")].raw


def test_every_heading_of_every_sample_page_holds_only_its_own_roles_calls(tai):
    client, run_id, store = tai
    recorded = _recorded(store)
    rows = store.rollout_rows()
    assert {row["stage"] for row in rows} >= {"coevolution/round0/eval", "coevolution/round1/pool0",
                                              "coevolution/round1/grpo", "coevolution/round1/eval"}
    checked = 0
    for row in rows:
        page = client.get(f"/runs/{run_id}/samples/{row['id']}")
        assert page.status_code == 200, page.text
        rollout = row["rollout"]
        headings = headings_of(page.text)
        # Every text of the rollout has a heading: y0, the critique, y1, each judgment.
        labels = {h["label"] for h in headings}
        judged_by_models = [n for n, j in rollout.judgments.items() if j.source == "model" and j.judge != "constraints"]
        assert labels >= {"initial response y0", "revision y1", *(f"judgment {n}" for n in judged_by_models)}
        for heading in headings:
            assert heading["role"] in heading["text"] and heading["label"] in heading["text"]
            if heading["calls"]:
                assert f"made in stage {heading['stage']}" in " ".join(heading["text"].split())
            for key in heading["calls"]:
                call = recorded[key]["request"]["call"]
                # The heading names the role and stage this very call recorded...
                assert (call["role"], call["stage"]) == (heading["role"], heading["stage"]), (row, heading)
                # ... and the call is one of the step (or the judge) that makes this text.
                if heading["label"] in STEPS:
                    assert call["step"] in STEPS[heading["label"]], (row["id"], heading, call)
                else:
                    judgment = rollout.judgments[heading["label"].removeprefix("judgment ")]
                    assert call["role"] == f"judge:{judgment.judge}"
                assert _text_of(rollout, heading["label"]).strip() in recorded[key]["completion"]
                checked += 1
        assert "Found by its text" not in page.text  # every call of this run records its maker
    assert checked > 3 * len(rows)


def _rows_where(store: RunStore, **texts) -> list[dict]:
    return [row for row in store.rollout_rows()
            if all(getattr(row["rollout"], k) == v for k, v in texts.items())]


def test_a_revision_equal_to_its_y0_is_filed_under_the_revision(tai):
    client, run_id, store = tai
    y0, c, y1 = TAI_TEXTS[1]
    assert y0 == y1
    rows = [row for row in _rows_where(store, y0=y0, y1=y1) if row["rollout"].c == c]
    assert rows, "the run holds the rollout whose revision repeats y0"
    recorded = _recorded(store)
    for row in rows:
        by_label = {}
        for heading in headings_of(client.get(f"/runs/{run_id}/samples/{row['id']}").text):
            by_label.setdefault(heading["label"], []).extend(heading["calls"])
        firsts, revisions = by_label["initial response y0"], by_label["revision y1"]
        assert firsts and revisions and not set(firsts) & set(revisions)
        asked = {k: " ".join(m["content"] for m in recorded[k]["request"]["messages"]) for k in firsts + revisions}
        # y0's calls were asked the bare prompt; the revision's were shown y0 and the critique.
        assert all(c not in asked[k] and recorded[k]["request"]["call"]["step"] == "respond" for k in firsts)
        assert all(c in asked[k] and y0 in asked[k] and recorded[k]["request"]["call"]["step"] == "revise"
                   for k in revisions)


def test_one_short_text_written_by_three_roles_is_filed_under_each(tai):
    client, run_id, store = tai
    [row] = _rows_where(store, y0="Fine.", c="Fine.", y1="Fine.")
    recorded = _recorded(store)
    headings = headings_of(client.get(f"/runs/{run_id}/samples/{row['id']}").text)
    roles = {h["label"]: {recorded[k]["request"]["call"]["role"] for k in h["calls"]} for h in headings}
    assert roles["initial response y0"] == {"actor"}
    assert roles["critique"] == {"critic"}
    assert roles["revision y1"] == {"actor"}
    assert roles["judgment pairwise"] == {"judge:pairwise"}
    # The pool's own calls, not the GRPO reward's revisions of the same text.
    stages = {h["label"]: h["stage"] for h in headings}
    assert stages["critique"] == stages["revision y1"] == row["stage"] == "coevolution/round1/pool0"


def test_the_sample_page_shows_tokens_latency_and_a_cut_off_badge(tai):
    client, run_id, store = tai
    long_y1 = TAI_TEXTS[2][2]
    [row] = [r for r in _rows_where(store, y1=long_y1) if r["stage"].endswith("pool0")]
    page = client.get(f"/runs/{run_id}/samples/{row['id']}").text
    [revision] = [h for h in headings_of(page) if h["label"] == "revision y1"]
    [key] = revision["calls"]
    call = _recorded(store)[key]
    block = page[page.index(f'data-key="{key[0]}"'):]
    block = block[:block.index("</div>")]
    assert f"cut off at {TAI_REVISION_LIMIT} tokens" in block
    # The replay model counts words as tokens.
    assert f"completion {len(long_y1.split())}" in block and len(long_y1.split()) >= TAI_REVISION_LIMIT
    assert f"latency {call['request']['call']['seconds']:.2f} s" in block
    # Texts within their limit carry no badge.
    [first] = [h for h in headings_of(page) if h["label"] == "initial response y0"]
    block = page[page.index(f'data-key="{first["calls"][0][0]}"'):]
    assert "cut off at" not in block[:block.index("</div>")]


def test_cut_off_shares_count_each_stage_and_roles_calls_at_their_limit(tai):
    _, _, store = tai
    expected: dict[tuple, list[int]] = {}
    for call in store.cached_calls(limit=None):
        tags, limit = call["request"]["call"], call["request"]["sampling"]["max_tokens"]
        counts = expected.setdefault((tags["stage"], tags["role"]), [0, 0])
        counts[0] += 1
        counts[1] += len(call["completion"].split()) >= limit  # the replay model's token count
    shares = cut_off_shares(store)
    assert {(s["stage"], s["role"]): [s["n"], s["cut_off"]] for s in shares} == expected
    assert sum(s["cut_off"] for s in shares) >= 2
    assert all(s["cut_off"] == 0 for s in shares if s["role"] != "actor")


def _listed(client, run_id: str, query: str) -> list[int]:
    page = client.get(f"/runs/{run_id}/samples?{query}")
    assert page.status_code == 200, page.text
    return [int(i) for i in re.findall(r'<tr class="sample-row" data-id="(\d+)">', page.text)]


def test_the_cut_off_filter_lists_rollouts_with_a_text_at_its_limit(tai):
    client, run_id, store = tai
    rows = store.rollout_rows()
    cut = [row["id"] for row in rows if row["rollout"].y1 == TAI_TEXTS[2][2]]
    assert len(cut) >= 2
    assert _listed(client, run_id, "cut_off=yes") == cut
    assert _listed(client, run_id, "cut_off=no") == [row["id"] for row in rows if row["id"] not in cut]
    assert _listed(client, run_id, "cut_off=") == [row["id"] for row in rows]
    page = client.get(f"/runs/{run_id}/samples?cut_off=yes")
    assert 'name="cut_off"' in page.text and '<option value="yes" selected>' in page.text
    bad = client.get(f"/runs/{run_id}/samples?cut_off=maybe")
    assert bad.status_code == 400 and "'maybe'" in bad.text and "cut_off" in bad.text


def test_search_finds_a_word_in_any_text_in_any_case(tai):
    client, run_id, store = tai
    rows = store.rollout_rows()

    def holding(word: str) -> list[int]:
        return [row["id"] for row in rows if any(word.lower() in (t or "").lower() for t in
                                                 (row["rollout"].x, row["rollout"].y0, row["rollout"].c,
                                                  row["rollout"].y1))]

    assert holding("moon") and holding("moon") != [row["id"] for row in rows]
    assert _listed(client, run_id, "q=moon") == holding("moon")
    assert _listed(client, run_id, "q=MOON") == holding("moon")  # any case
    assert _listed(client, run_id, "q=whistles") == holding("whistles")  # a word only y1 holds
    assert _listed(client, run_id, "q=stone+was+found") == holding("stone was found")  # only the critique
    assert _listed(client, run_id, "q=no+such+words") == []
    # With another filter: both apply.
    assert _listed(client, run_id, "q=wind&cut_off=yes") == [i for i in holding("wind")
                                                            if i in _listed(client, run_id, "cut_off=yes")]
    assert 'value="moon"' in client.get(f"/runs/{run_id}/samples?q=moon").text


# -- the record behind it --------------------------------------------------------------------

def test_call_info_reads_tagged_and_older_rows():
    tagged_row = {"key": "k", "index": 0, "model_id": "m", "completion": "hi", "prompt_tokens": 12,
                  "completion_tokens": 64, "cached": False,
                  "request": {"messages": [], "sampling": {"max_tokens": 64},
                              "call": {"role": "critic", "stage": "s/round1/eval", "step": "critique",
                                       "seconds": 0.25, "cut_off": True}}}
    info = call_info(tagged_row)
    assert (info.role, info.stage, info.step, info.seconds, info.cut_off) == ("critic", "s/round1/eval", "critique",
                                                                              0.25, True)
    assert (info.prompt_tokens, info.completion_tokens, info.max_tokens, info.cached) == (12, 64, 64, False)
    assert info.tagged
    # An older run's row: no "call" record; cut off worked out from the tokens.
    old = {**tagged_row, "request": {"messages": [], "sampling": {"max_tokens": 64}}}
    info = call_info(old)
    assert (info.role, info.stage, info.seconds, info.cut_off, info.tagged) == (None, None, None, True, False)
    assert call_info({**old, "completion_tokens": 63}).cut_off is False
    # Tokens not counted (0), or no request kept: unknown, not "not cut off".
    assert call_info({**old, "completion_tokens": 0}).cut_off is None
    assert call_info({**old, "request": None}).cut_off is None


def test_an_older_runs_calls_are_found_by_text_and_say_so(tmp_path):
    from test_samples import make_taiscore_shaped_run

    run = make_taiscore_shaped_run(tmp_path / "old")
    store = RunStore(run)
    # A call cached before calls recorded their maker, at its token limit.
    store.cache_put("old-cut", "replay:test", {0: Completion(text="Mars is red planet", completion_tokens=64)},
                    request={"messages": [{"role": "user", "content": "Name a planet."}],
                             "sampling": {"temperature": 0.8, "max_tokens": 64}})
    [p1] = [row["id"] for row in store.rollout_rows() if row["rollout"].sample_id == "p1"]
    store.close()
    app = create_app([run])
    [ref] = app.state.runs.runs()
    client = TestClient(app)
    page = client.get(f"/runs/{ref.id}/samples/{p1}").text
    headings = headings_of(page)
    assert [h["role"] for h in headings if h["calls"]][:3] == ["actor", "critic", "actor"]
    assert "Found by its text" in page
    assert "cut off at 64 tokens" in page
    assert _listed(client, ref.id, "cut_off=yes") == [p1]
