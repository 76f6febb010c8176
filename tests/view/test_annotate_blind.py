"""What an annotator's pages may and must say: opaque ids only (no rollout id, stage,
condition or round in a url, a form field or the text), a mark on a text cut off at its token
limit, and at the end of a batch their agreement with the judge, with its n (an interval only
from 5 pairs on, a judge's share within its margin of 0.5 counted as a tie).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from replay_runs import build_controls, build_taiscore

from coevo.rundir.store import RunStore
from coevo.view.annotate import COOKIE, KIND, SERVED
from coevo.view.annotate_export import export_annotations
from coevo.view.annotate_ids import batch_id, pair_id, run_secret
from coevo.view.annotate_pairs import store_pairs
from coevo.view.app import create_app

#: What a pair's key looks like inside a page (`STAGE|KIND|RID` or `...|RID-RID`).
KEY = re.compile(r"\|(revision|critique|vs_round0|vs_condition)\||\|\d+(-\d+)?\b")


@pytest.fixture(scope="module")
def controls(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("blind")
    return build_controls(folder / "runs" / "controls", folder / "inputs")


def _client(run: Path, annotator: str) -> tuple[TestClient, str]:
    app = create_app([run.parent])
    [ref] = app.state.runs.runs()
    client = TestClient(app, headers={"origin": "http://testserver"})
    client.cookies.set(COOKIE, annotator, domain="testserver.local", path="/")
    return client, ref.id


def _token(page: str) -> str:
    return re.search(r'<input type="hidden" name="token" value="([^"]+)">', page).group(1)


def _served(run: Path, token: str) -> dict:
    store = RunStore(run, read_only=True)
    try:
        return store.get_record(SERVED, token)
    finally:
        store.close()


def _secret(run: Path) -> bytes:
    store = RunStore(run, read_only=True)
    try:
        return run_secret(store, run)  # drawn here if no request drew it yet (a test run alone)
    finally:
        store.close()


def _visible(page: str) -> str:
    """What an annotator reads and what the page's source holds below the run's header."""
    return page.split("<main>")[1]


def _label_all(client: TestClient, run_id: str, url: str, choose=lambda page: "A") -> tuple[list[str], str]:
    """Label every pair of the batch at `url`; (each page's url and source, the done page)."""
    seen = []
    answer = client.get(url)
    while 'id="label-form"' in answer.text:
        seen += [str(answer.url), answer.text]
        label = client.post(f"/runs/{run_id}/annotate/label", data={"token": _token(answer.text),
                                                                      "label": choose(answer.text)})
        assert label.status_code == 200
        answer = label
    return seen, answer.text


def test_no_url_field_or_text_names_a_rollout_a_stage_or_a_round(controls):
    client, run_id = _client(controls, "blind")
    overview = client.get(f"/runs/{run_id}/annotate").text
    links = [html.unescape(h) for h in re.findall(r'class="annotate-start" href="([^"]+)"', overview)]
    assert links and all(re.fullmatch(rf"/runs/{run_id}/annotate\?batch=b-[0-9a-f]{{12}}", link) for link in links)
    secret = _secret(controls)  # drawn by the first page
    seen, done = _label_all(client, run_id, f"/runs/{run_id}/annotate?batch={batch_id(secret, 'controls', 'critique')}")
    assert len(seen) == 2 * 9  # 9 critique pairs, each a url and a page
    review = client.get(f"/runs/{run_id}/annotate/review").text
    for text in [overview, *seen, done, review]:
        shown = _visible(text) if text.startswith("<") else text.split("?", 1)[1]
        assert not KEY.search(shown), KEY.search(shown)
        # The stage's name (the run's id and folder, also "controls", may be in links and the command).
        assert "controls" not in shown.replace(f"/runs/{run_id}/", "").split('id="annotate-command"')[0]
        for name, value in re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', shown):
            assert re.fullmatch({"batch": r"b-[0-9a-f]{12}", "pair": r"p-[0-9a-f]{16}",
                                 "annotator": "blind"}.get(name, r"[\w-]{20,}"), value), (name, value)
    # The ids are the server's: the batch's and pair's, made with the run's secret.
    first = _served(controls, _token(seen[1]))
    assert f"batch={batch_id(secret, 'controls', 'critique')}" in seen[0]
    assert f"pair={pair_id(secret, first['pair'])}" in seen[0]
    # A researcher asks to see the stages; an id that is not the run's is a 404.
    assert '<td class="l stage">controls</td>' in client.get(f"/runs/{run_id}/annotate?reveal=stages").text
    assert client.get(f"/runs/{run_id}/annotate?batch=b-000000000000").status_code == 404
    pair_url = seen[0].replace(re.search(r"pair=(p-[0-9a-f]+)", seen[0]).group(1), "p-0000000000000000")
    assert client.get(pair_url).status_code == 404


def test_the_batch_id_exports_that_batch(controls, tmp_path):
    client, run_id = _client(controls, "exporter")
    secret = _secret(controls)
    revision = batch_id(secret, "controls", "revision")
    for kind in ("revision", "critique"):
        page = client.get(f"/runs/{run_id}/annotate?batch={batch_id(secret, 'controls', kind)}").text
        answer = client.post(f"/runs/{run_id}/annotate/label", data={"token": _token(page), "label": "B"})
        assert answer.status_code == 200
    result = export_annotations(controls, tmp_path / "out", stage=revision, annotator="exporter")
    lines = Path(result["human"]).read_text().splitlines()
    assert len(lines) == 2 and all("|revision|" in line for line in lines)  # that batch's one pair, not the stage's
    human = client.get(f"/runs/{run_id}/annotate/export?batch={revision}&file=human&annotator=exporter")
    assert human.status_code == 200 and human.text.splitlines() == lines


def test_a_finished_batch_shows_agreement_with_the_judge_with_its_n(controls):
    """The critique batch: 9 pairs, each critique scored by the gold judge through the S(y1)
    it led to; labelling "A" every time gives a count the test works out from the store."""
    from coevo.eval.agreement import pairwise_agreement

    client, run_id = _client(controls, "agree")
    secret = _secret(controls)
    seen, done = _label_all(client, run_id, f"/runs/{run_id}/annotate?batch={batch_id(secret, 'controls', 'critique')}")
    store = RunStore(controls, read_only=True)
    try:
        pairs = {p.key: p for p in store_pairs(store, "controls")["critique"]}
        records = {r["pair"]: r for _, r in store.get_records(KIND) if r.get("annotator") == "agree"}
    finally:
        store.close()
    human = {k: {c: float(r["winner"] == c) for c in r["candidates"]} for k, r in records.items()}
    judge = {k: {c: s for c, s in pairs[k].judges["gold_rubric"].items() if s is not None} for k in records}
    expected = pairwise_agreement(human, {k: v for k, v in judge.items() if len(v) == 2})
    assert 'id="annotate-done"' in done
    n = re.search(r'id="annotate-agreement" data-n="(\d+)"', done).group(1)
    assert int(n) == expected.n_pairs
    text = html.unescape(re.search(r'id="annotate-agreement-value">(.*?)</strong>', done).group(1))
    if expected.n_pairs >= 5:
        assert text == f"{expected.agreement:.3f} [{expected.agreement_lo:.3f}, {expected.agreement_hi:.3f}] " \
                       f"(n={expected.n_pairs})"
    else:
        assert text == f"{expected.agreement:.3f} (n={expected.n_pairs}: too few to tell)"
    assert f"{expected.n_agree} of {expected.n_pairs}" in done and f"{expected.n_tied} pair" in done


def test_few_pairs_give_no_interval_and_a_share_near_half_is_a_tie(tmp_path):
    from coevo.core.types import Judgment, Rollout

    store = RunStore(tmp_path / "runs" / "pool")
    for i, p in enumerate((0.52, 1.0, 0.0)):  # P(y1 preferred): 0.52 is the judge not choosing
        judgment = Judgment(judge="pairwise", score=p, scores={"preference": p}, shown_order=["first", "second"])
        store.save_rollout("t/round1/pool0", Rollout(sample_id=f"s{i}", x=f"prompt {i}", y0=f"old {i}", c="c",
                                                     y1=f"new {i}", judgments={"pairwise": judgment}))
    store.close()
    run = tmp_path / "runs" / "pool"
    client, run_id = _client(run, "few")
    client.get(f"/runs/{run_id}/annotate")  # draws the run's id secret
    url = f"/runs/{run_id}/annotate?batch={batch_id(_secret(run), 't/round1/pool0', 'revision')}"

    def prefer_new(page: str) -> str:
        left = html.unescape(re.search(r'<pre id="pair-left">(.*?)</pre>', page).group(1))
        return "A" if left.startswith("new") else "B"

    _, done = _label_all(client, run_id, url, prefer_new)
    value = html.unescape(re.search(r'id="annotate-agreement-value">(.*?)</strong>', done).group(1))
    # Two decided pairs (1.0: agree, 0.0: disagree); 0.52 is a tie by the margin rule.
    assert value == "0.500 (n=2: too few to tell)" and "[" not in value
    assert 'data-n="2"' in done and "1 of 2" in done
    ties = "1 pair tied by you or the judge left out (1 of them the judge's share within ±0.05 of 0.5)"
    assert ties in html.unescape(done)


def test_a_text_cut_off_at_its_token_limit_is_marked(tmp_path):
    from replay_runs import TAI_REVISION_LIMIT, TAI_TEXTS

    run = build_taiscore(tmp_path / "runs" / "tai", tmp_path / "inputs")
    long_revision = TAI_TEXTS[2][2]  # longer than the revision's token limit: the call was cut off
    assert len(long_revision.split()) > TAI_REVISION_LIMIT
    client, run_id = _client(run, "cut")
    store = RunStore(run, read_only=True)
    try:
        found = [(stage, p) for stage, _ in store.rollout_stages() for p in store_pairs(store, stage)["revision"]]
    finally:
        store.close()
    client.get(f"/runs/{run_id}/annotate")  # draws the run's id secret
    secret = _secret(run)
    marked = unmarked = 0
    for stage, pair in found:
        page = client.get(f"/runs/{run_id}/annotate?batch={batch_id(secret, stage, 'revision')}"
                          f"&pair={pair_id(secret, pair.key)}").text
        left = _served(run, _token(page))["left"]
        for side, candidate in (("left", left), ("right", pair.candidates[1 - pair.candidates.index(left)])):
            cut = f'id="pair-{side}-cut"' in page
            assert cut == (pair.text_of(candidate) == long_revision), (stage, candidate)
            marked += cut
            unmarked += not cut
        if long_revision in pair.texts:
            assert "cut off at its token limit" in page
    assert marked >= 1 and unmarked >= 1
