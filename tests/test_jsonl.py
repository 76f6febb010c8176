"""The one JSONL reader: line numbers that skip nothing, errors in the caller's type."""

import pytest

from coevo.core.jsonl import iter_jsonl


class CallerError(Exception):
    pass


def test_blank_lines_are_skipped_but_counted():
    rows = list(iter_jsonl(['{"a": 1}', "", "  ", '{"a": 2}'], "f.jsonl"))
    assert rows == [(1, {"a": 1}), (4, {"a": 2})]


def test_bad_json_names_file_line_and_column_in_the_callers_error_type():
    with pytest.raises(CallerError, match=r"f.jsonl: line 2 is not valid JSON .* column 2"):
        list(iter_jsonl(['{"a": 1}', "{oops"], "f.jsonl", CallerError))


def test_a_non_object_line_is_refused():
    with pytest.raises(CallerError, match=r"line 1 is a JSON list, not an object.*such as \{\"id\": 1\}"):
        list(iter_jsonl(["[1, 2]"], "f.jsonl", CallerError, example='{"id": 1}'))
