"""The viewer's responses go out gzip-compressed to a client that accepts it: plotly.js
(megabytes, compressed once and kept), the pages and the small assets; a client that does not
accept gzip gets the same bytes uncompressed."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from replay_runs import build_controls

from coevo.view.app import accepts_gzip, create_app
from coevo.view.context import plotly_js

BROWSER = {"accept-encoding": "gzip, deflate, br", "accept": "text/html"}


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> TestClient:
    folder = tmp_path_factory.mktemp("gzip")
    build_controls(folder / "runs" / "controls", folder / "inputs")
    return TestClient(create_app([folder / "runs"]))


def test_plotly_is_served_gzipped_to_a_browser_and_plain_to_others(client):
    js = plotly_js()
    zipped = client.get("/static/plotly.min.js", headers=BROWSER)
    assert zipped.status_code == 200 and zipped.headers["content-encoding"] == "gzip"
    assert zipped.headers["vary"] == "Accept-Encoding" and "max-age" in zipped.headers["cache-control"]
    assert zipped.text == js  # what the browser decodes is plotly.js itself
    assert zipped.num_bytes_downloaded < len(js.encode()) / 2  # what crossed the wire
    assert int(zipped.headers["content-length"]) == zipped.num_bytes_downloaded  # not compressed twice
    again = client.get("/static/plotly.min.js", headers=BROWSER)
    assert again.num_bytes_downloaded == zipped.num_bytes_downloaded  # the kept bytes, the same each time
    plain = client.get("/static/plotly.min.js", headers={"accept-encoding": "identity"})
    assert "content-encoding" not in plain.headers and plain.num_bytes_downloaded == len(js.encode())


@pytest.mark.parametrize("path", ["/", "/runs/controls", "/runs/controls/samples", "/static/style.css"])
def test_pages_and_assets_are_gzipped(client, path):
    answer = client.get(path, headers=BROWSER)
    assert answer.status_code == 200 and answer.headers.get("content-encoding") == "gzip", path
    assert answer.num_bytes_downloaded < len(answer.content)
    assert answer.headers["vary"] == "Accept-Encoding"


def test_a_compressed_page_still_sets_the_session_cookie(client):
    first = TestClient(client.app).get("/", headers=BROWSER)  # a browser the viewer has not seen
    assert first.headers["content-encoding"] == "gzip" and first.headers["set-cookie"].startswith("coevo_view_")


def test_an_answer_under_a_kibibyte_goes_out_as_it_is(client):
    missing = client.get("/runs/no-such-run", headers={"accept-encoding": "gzip"})  # a short JSON error
    assert missing.status_code == 404 and len(missing.content) < 1024
    assert "content-encoding" not in missing.headers


@pytest.mark.parametrize(("header", "accepted"), [("gzip, deflate, br", True), ("gzip", True), ("identity", False),
                                                   ("", False), ("deflate, br", False)])
def test_accept_encoding_is_read_as_the_middleware_reads_it(header, accepted):
    assert accepts_gzip(header) is accepted
