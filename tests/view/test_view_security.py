"""Who may talk to `coevo view` (coevo.view.security): requests addressed to a foreign Host
are refused (DNS rebinding), a label posted from another origin or with no origin and no
session token is refused, the viewer's own pages and scripts holding the token get through,
`--host` off this machine warns, and two annotators labelling one run at once lose nothing
(a live uvicorn server, posts from threads).

The run is a real replay run (controls; replay_runs.py) built for this module, so its labels
never land in a run other tests look at.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from fastapi.testclient import TestClient
from replay_runs import build_controls

from coevo.rundir.store import RunStore
from coevo.view.annotate import KIND, SERVED
from coevo.view.annotate_pairs import stage_pairs
from coevo.view.app import create_app
from coevo.view.security import (
    Guard,
    check_allow_host,
    exposure_warning,
    is_loopback,
    served_hosts,
    split_host,
)

STAGE = "controls"
SERVED_AT = "http://127.0.0.1:8000"


@pytest.fixture(scope="module")
def controls(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("security")
    return build_controls(folder / "runs" / "controls", folder / "inputs")


def _app(run: Path, extra: tuple[str, ...] = ()):
    """The viewer as `coevo view --port 8000` makes it (its allow-list), over `run`'s folder."""
    app = create_app([run.parent], allowed_hosts=served_hosts("127.0.0.1", 8000, extra))
    [ref] = app.state.runs.runs()
    return app, ref.id


def _labels(run: Path) -> dict[str, dict]:
    store = RunStore(run, read_only=True)
    try:
        return dict(store.get_records(KIND))
    finally:
        store.close()


def _pair_token(client, run_id: str, pair, annotator: str) -> str:
    """The pair token of `pair`'s page, as served to `annotator`."""
    # A link by stage and pair key, as a researcher writes it: redirected to the pair's opaque url.
    page = client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind={pair.kind}&annotator={annotator}"
                      f"&pair={quote(pair.key)}", follow_redirects=True)
    assert page.status_code == 200, page.text
    return re.search(r'<input type="hidden" name="token" value="([^"]+)">', page.text).group(1)


def _pairs(run: Path, kind: str = "revision"):
    store = RunStore(run, read_only=True)
    try:
        return stage_pairs(store.rollout_rows(STAGE), STAGE)[kind]
    finally:
        store.close()


# ─── the allow-list ─────────────────────────────────────────────────────────────────


def test_host_names_are_read_as_a_browser_writes_them():
    assert split_host("LocalHost.:8000") == ("localhost", 8000)
    assert split_host("[::1]:8000") == ("[::1]", 8000) == split_host("::1", 8000)
    assert split_host("myhost") == ("myhost", None)
    for bad in ("", "http://x", "a b", "x:port", "x:70000", "[::1", "*", "user@host"):
        with pytest.raises(ValueError):
            split_host(bad)
    assert served_hosts("127.0.0.1", 8000, ["box.lan"]) == [
        "127.0.0.1:8000", "localhost:8000", "[::1]:8000", "box.lan"]
    assert served_hosts("::1", 9000)[0] == "[::1]:9000"
    assert check_allow_host(" box.lan:8443 ") == "box.lan:8443"
    with pytest.raises(ValueError, match="--allow-host takes a host name"):
        check_allow_host("")


@pytest.mark.parametrize("base", [SERVED_AT, "http://localhost:8000", "http://[::1]:8000"])
def test_the_served_address_and_the_loopback_names_are_answered(controls, base):
    app, run_id = _app(controls)
    client = TestClient(app, base_url=base)
    assert client.get("/").status_code == 200
    assert client.get(f"/runs/{run_id}").status_code == 200


@pytest.mark.parametrize("base", ["http://evil.example:8000", "http://127.0.0.1:9999", "http://testserver",
                                  "http://localhost.evil.example:8000"])
def test_a_foreign_host_is_refused_with_the_way_to_allow_it(controls, base):
    app, run_id = _app(controls)
    client = TestClient(app, base_url=base)
    for path in ("/", f"/runs/{run_id}", f"/runs/{run_id}/annotate", "/static/style.css"):
        refused = client.get(path)
        assert refused.status_code == 403, path
        assert "DNS rebinding" in refused.text and "--allow-host" in refused.text
    page = client.get("/", headers={"accept": "text/html"})
    assert page.status_code == 403 and page.headers["content-type"].startswith("text/html")
    assert "<p>coevo view refused this request" in page.text
    if "evil" in base:
        assert f"--allow-host {base.split('//')[1].split(':')[0]}" in page.text
    # Nothing of the run in a refusal: no run id, no text.
    assert run_id not in client.get("/").text


def test_allow_host_adds_a_name_on_any_port_or_on_one(controls):
    app, _ = _app(controls, ("box.lan", "proxy.example:8443"))
    assert TestClient(app, base_url="http://box.lan:1234").get("/").status_code == 200
    assert TestClient(app, base_url="https://proxy.example:8443").get("/").status_code == 200
    assert TestClient(app, base_url="https://proxy.example").get("/").status_code == 403


def test_without_an_allow_list_any_host_is_answered_but_writes_still_need_the_origin(controls):
    app = create_app([controls.parent])  # a library user's app (and the other tests' TestClient)
    client = TestClient(app, base_url="http://anything.example")
    assert client.get("/").status_code == 200
    refused = TestClient(app).post("/runs/x/annotate/label", data={"token": "t", "label": "A"},
                                   headers={"origin": "http://evil.example"})
    assert refused.status_code == 403


# ─── writes: same origin or the session token ───────────────────────────────────────


def test_a_cross_origin_label_is_refused_and_a_same_origin_one_is_saved(controls):
    app, run_id = _app(controls)
    pairs = _pairs(controls)
    client = TestClient(app, base_url=SERVED_AT)
    url = f"/runs/{run_id}/annotate/label"
    token = _pair_token(client, run_id, pairs[0], "xorigin")
    before = _labels(controls)
    for header in ({"origin": "http://evil.example"}, {"origin": "null"}, {"origin": "http://127.0.0.1:9999"},
                   {"referer": "http://evil.example/page"}):
        # The session cookie the page set travels too (as a browser on a same-site page would
        # send it): a foreign origin is refused all the same.
        refused = client.post(url, data={"token": token, "label": "A"}, headers=header)
        assert refused.status_code == 403, header
        assert "not from the viewer's own pages" in refused.text
    assert _labels(controls) == before
    for header in ({"origin": SERVED_AT}, {"origin": "http://localhost:8000"},
                   {"referer": f"{SERVED_AT}/runs/{run_id}/annotate?stage={STAGE}"}):
        saved = client.post(url, data={"token": token, "label": "B"}, headers=header, follow_redirects=False)
        assert saved.status_code == 303, (header, saved.text)
    assert _labels(controls)[f"{pairs[0].key}#annotator=xorigin"]["label"] == "B"


def test_a_post_with_no_origin_needs_the_session_token(controls):
    app, run_id = _app(controls)
    pairs = _pairs(controls)
    url = f"/runs/{run_id}/annotate/label"
    browser = TestClient(app, base_url=SERVED_AT)
    token = _pair_token(browser, run_id, pairs[1], "notoken")
    guard: Guard = app.state.guard
    assert browser.cookies.get(guard.cookie) == guard.token  # the page handed it the session token
    # A script that never loaded a page: no Origin, no Referer, no token.
    bare = TestClient(app, base_url=SERVED_AT)
    before = _labels(controls)
    refused = bare.post(url, data={"token": token, "label": "A"})
    assert refused.status_code == 403 and "no session token" in refused.text
    refused = bare.post(url, data={"token": token, "label": "A"}, headers={"x-coevo-token": "guessed"})
    assert refused.status_code == 403
    assert bare.post(f"/runs/{run_id}/annotate/undo", data={"pair": pairs[1].key}).status_code == 403
    assert _labels(controls) == before
    # The token in a header, or the cookie a page of the viewer set: saved.
    saved = bare.post(url, json={"token": token, "label": "A"}, headers={"x-coevo-token": guard.token})
    assert saved.status_code == 200 and saved.json()["saved"]["label"] == "A"
    saved = browser.post(url, json={"token": token, "label": "tie"})
    assert saved.status_code == 200 and saved.json()["replaced"] == "A"


def test_the_session_cookie_is_strict_and_out_of_scripts_reach(controls):
    app, _ = _app(controls)
    cookie = TestClient(app, base_url=SERVED_AT).get("/").headers["set-cookie"]
    assert f"{app.state.guard.cookie}={app.state.guard.token}" in cookie
    assert "SameSite=Strict" in cookie and "HttpOnly" in cookie and "Path=/" in cookie
    other, _ = _app(controls)
    assert other.state.guard.token != app.state.guard.token  # drawn afresh for each viewer


# ─── --host off this machine ────────────────────────────────────────────────────────


def test_a_host_off_this_machine_warns_and_loopback_does_not(controls, monkeypatch, capsys):
    for host in ("127.0.0.1", "127.3.2.1", "::1", "localhost", "LOCALHOST"):
        assert is_loopback(host) and exposure_warning(host) is None, host
    for host in ("0.0.0.0", "::", "192.168.1.5", "myhost"):
        assert "open to anyone on the network" in exposure_warning(host), host
    import coevo.view.app
    from coevo.commands.runs import serve_runs

    calls = []
    monkeypatch.setattr(coevo.view.app, "serve", lambda paths, **kwargs: calls.append(kwargs))
    serve_runs(controls.parent, host="0.0.0.0", port=8000, allow_hosts=["box.lan"])
    printed = capsys.readouterr().out
    assert "warning: --host 0.0.0.0" in printed and "runs' texts and their annotation labels" in printed
    assert calls[0]["allow_hosts"] == ["box.lan"] and calls[0]["host"] == "0.0.0.0"
    serve_runs(controls.parent, host="127.0.0.1", port=8000)
    assert "warning" not in capsys.readouterr().out


# ─── a live server: two annotators at once ──────────────────────────────────────────


@contextmanager
def live_viewer(folder: Path):
    """The viewer under uvicorn on a free port of 127.0.0.1, in a thread, with the allow-list
    `coevo view` gives it; its url."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app([folder], allowed_hosts=served_hosts("127.0.0.1", port))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert server.started, "the viewer did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


def _label_pairs(base: str, run_id: str, annotator: str, pairs: list) -> dict[str, str]:
    """One annotator's browser: each pair's page, then its label (as the page posts it)."""
    posted = {}
    with httpx.Client(base_url=base, headers={"origin": base}, timeout=60) as client:
        for pair in pairs:
            token = _pair_token(client, run_id, pair, annotator)
            label = ("A", "B", "tie")[(len(pair.key) + len(annotator)) % 3]
            answer = client.post(f"/runs/{run_id}/annotate/label", json={"token": token, "label": label})
            assert answer.status_code == 200, answer.text
            posted[pair.key] = label
    return posted


def test_two_annotators_labelling_at_once_lose_nothing(tmp_path):
    run = build_controls(tmp_path / "runs" / "controls", tmp_path / "inputs")  # its own: only these labels
    pairs = _pairs(run, "revision") + _pairs(run, "critique")
    assert len(pairs) >= 20
    names = ("alice", "bob")
    jobs = [(name, pairs[i::4]) for name in names for i in range(4)]  # 4 browser tabs each
    with live_viewer(run.parent) as base:
        run_id = "controls"
        with httpx.Client(base_url=base) as plain:
            assert plain.get("/", headers={"host": "evil.example"}).status_code == 403  # through a real socket too
        with ThreadPoolExecutor(len(jobs)) as pool:
            results = list(pool.map(lambda job: (job[0], _label_pairs(base, run_id, *job)), jobs))
    expected = {(name, key): label for name, posted in results for key, label in posted.items()}
    assert len(expected) == len(names) * len(pairs)
    stored = _labels(run)
    assert len(stored) == len(expected)
    for (name, key), label in expected.items():
        record = stored[f"{key}#annotator={name}"]
        assert (record["annotator"], record["pair"], record["label"], record["history"]) == (name, key, label, [])
    store = RunStore(run, read_only=True)
    try:
        served = [(r["annotator"], r["pair"]) for _, r in store.get_records(SERVED)]
    finally:
        store.close()
    assert sorted(served) == sorted(expected)  # one side drawn per person and pair, none lost
