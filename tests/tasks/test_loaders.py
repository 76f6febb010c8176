"""load_samples on JSONL, Parquet and datasets folders, column mapping, and its errors."""

import json

import pytest

from coevo.tasks.loaders import DataError, derive_id, load_samples

ROWS = [
    {"uid": 7, "instruction": "Write a haiku about rain.", "kind": "poem", "level": "easy"},
    {"uid": 8, "instruction": "Write a memo about parking.", "kind": "memo", "level": "hard"},
]
RUBRIC = {"criteria": [{"name": "on_topic", "description": "Stays on topic.", "weight": 2}]}
MAP = {"prompt": "instruction", "id": "uid", "genre": "kind"}


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def check_mapped(samples):
    assert [s.id for s in samples] == ["7", "8"]
    assert samples[0].prompt == "Write a haiku about rain."
    assert samples[1].genre == "memo"
    # Unmapped columns survive in meta.
    assert samples[0].meta == {"level": "easy"}


def test_jsonl_plain(tmp_path):
    rows = [{"id": "a", "prompt": "Write a poem.", "rubric": RUBRIC, "meta": {"x": 1}},
            {"id": "b", "prompt": "Write a memo.", "reference": "Dear all"}]
    samples = load_samples(str(write_jsonl(tmp_path / "d.jsonl", rows)))
    assert [s.id for s in samples] == ["a", "b"]
    assert samples[0].rubric.criteria[0].weight == 2
    assert samples[0].meta == {"x": 1}
    assert samples[1].reference == "Dear all" and samples[1].rubric is None


def test_jsonl_column_mapping_and_path_object(tmp_path):
    check_mapped(load_samples(write_jsonl(tmp_path / "d.jsonl", ROWS), columns=MAP))


def test_jsonl_blank_lines_and_limit(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "one"}\n\n{"prompt": "two"}\nnot json\n')
    # The broken line lies past the limit, so it is never read.
    assert [s.prompt for s in load_samples(str(path), limit=2)] == ["one", "two"]


def test_missing_id_is_hash_of_prompt(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [{"prompt": "Write a poem."}, {"prompt": "Write X."}])
    first = load_samples(str(path))
    assert first[0].id == derive_id("Write a poem.")
    assert [s.id for s in load_samples(str(path))] == [s.id for s in first]
    assert first[0].id != first[1].id


def test_rubric_as_json_string_or_list(tmp_path):
    rows = [{"id": "a", "prompt": "p", "rubric": json.dumps(RUBRIC)},
            {"id": "b", "prompt": "q", "rubric": RUBRIC["criteria"]}]
    samples = load_samples(str(write_jsonl(tmp_path / "d.jsonl", rows)))
    assert samples[0].rubric == samples[1].rubric


def test_parquet(tmp_path):
    datasets = pytest.importorskip("datasets")
    path = tmp_path / "d.parquet"
    datasets.Dataset.from_list(ROWS).to_parquet(str(path))
    check_mapped(load_samples(str(path), columns=MAP))
    assert len(load_samples(str(path), columns=MAP, limit=1)) == 1


def test_parquet_nested_rubric(tmp_path):
    datasets = pytest.importorskip("datasets")
    path = tmp_path / "d.parquet"
    datasets.Dataset.from_list([{"id": "a", "prompt": "p", "rubric": RUBRIC}]).to_parquet(str(path))
    assert load_samples(str(path))[0].rubric.criteria[0].name == "on_topic"


def test_datasets_folder(tmp_path):
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_list(ROWS).save_to_disk(str(tmp_path / "ds"))
    check_mapped(load_samples(str(tmp_path / "ds"), columns=MAP))


def test_datasets_dict_folder(tmp_path):
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_list(ROWS)
    datasets.DatasetDict({"train": ds}).save_to_disk(str(tmp_path / "one"))
    check_mapped(load_samples(str(tmp_path / "one"), columns=MAP))
    datasets.DatasetDict({"train": ds, "test": ds}).save_to_disk(str(tmp_path / "two"))
    with pytest.raises(DataError, match=r"several splits.*point at one"):
        load_samples(str(tmp_path / "two"), columns=MAP)
    check_mapped(load_samples(str(tmp_path / "two" / "test"), columns=MAP))


# ---------------------------------------------------------------- errors


def test_error_missing_file(tmp_path):
    with pytest.raises(DataError, match=r"no such file.*\.jsonl file, a \.parquet file"):
        load_samples(str(tmp_path / "nope.jsonl"))


def test_error_unsupported_type_and_plain_folder(tmp_path):
    (tmp_path / "d.csv").write_text("prompt\nhi\n")
    with pytest.raises(DataError, match="unsupported file type"):
        load_samples(str(tmp_path / "d.csv"))
    (tmp_path / "plain").mkdir()
    with pytest.raises(DataError, match="not one saved by datasets"):
        load_samples(str(tmp_path / "plain"))


@pytest.mark.parametrize("source", ["{d}/d.jsonl", "{d}/d.ndjson", "writingbench:{d}/d.jsonl"])
def test_error_binary_file_names_it_where_and_the_fix(tmp_path, source):
    # A zip (or a Parquet file) named .jsonl, past a good first line: not a UnicodeDecodeError traceback.
    good = json.dumps({"prompt": "ok"}) + "\n"
    path = tmp_path / source.rpartition("/")[2]
    path.write_bytes(good.encode() + b"PK\x03\x04\x14\x00\x08\x08\xa0\xff\xfe" * 20)
    with pytest.raises(DataError) as info:
        load_samples(source.format(d=tmp_path))
    message = str(info.value)
    assert f"data file {path} is not UTF-8 text (line 2, byte {len(good) + 8})" in message
    assert ("a .jsonl file, a .parquet file" if source.startswith("{d}") else "the benchmark's own JSONL") in message
    assert "\n" not in message


def test_error_unknown_bundled():
    with pytest.raises(DataError, match=r"unknown bundled set 'nope'.*bundled:writing"):
        load_samples("bundled:nope")


def test_error_bad_json_names_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "ok"}\n\n{"prompt": oops}\n')
    with pytest.raises(DataError, match=r"line 3 is not valid JSON"):
        load_samples(str(path))
    path.write_text('{"prompt": "ok"}\n[1, 2]\n')
    with pytest.raises(DataError, match=r"line 2 is a JSON list, not an object"):
        load_samples(str(path))


def test_error_missing_column_lists_present_and_suggests_columns(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", ROWS)
    with pytest.raises(DataError) as info:
        load_samples(str(path))
    message = str(info.value)
    assert "missing required column 'prompt'" in message and "line 1" in message
    assert "['instruction', 'kind', 'level', 'uid']" in message
    assert "columns={'prompt': '<your column>'}" in message
    with pytest.raises(DataError, match=r"maps 'prompt' to 'text', which is not among them"):
        load_samples(str(path), columns={"prompt": "text"})


def test_error_missing_column_parquet(tmp_path):
    datasets = pytest.importorskip("datasets")
    path = tmp_path / "d.parquet"
    datasets.Dataset.from_list(ROWS).to_parquet(str(path))
    with pytest.raises(DataError, match=r"columns present: \['instruction', 'kind', 'level', 'uid'\]"):
        load_samples(str(path))


def test_error_unknown_columns_key(tmp_path):
    with pytest.raises(DataError, match=r"unknown field 'instruction'"):
        load_samples(str(write_jsonl(tmp_path / "d.jsonl", ROWS)), columns={"instruction": "prompt"})


def test_error_duplicate_ids(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "prompt": "x"}, {"id": "a", "prompt": "y"}])
    with pytest.raises(DataError, match=r"duplicate id 'a' at line 2 \(first seen at line 1\)"):
        load_samples(str(path))
    same_prompt = write_jsonl(tmp_path / "e.jsonl", [{"prompt": "x"}, {"prompt": "x"}])
    with pytest.raises(DataError, match="duplicate id"):
        load_samples(str(same_prompt))


def test_error_empty_prompt_and_bad_rubric(tmp_path):
    with pytest.raises(DataError, match="non-empty string"):
        load_samples(str(write_jsonl(tmp_path / "d.jsonl", [{"prompt": "  "}])))
    bad = [{"prompt": "p", "rubric": {"criteria": [{"description": "no name"}]}}]
    with pytest.raises(DataError, match=r"line 1: unreadable rubric \(criteria\.0\.name"):
        load_samples(str(write_jsonl(tmp_path / "e.jsonl", bad)))
