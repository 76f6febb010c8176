"""docs/config.md lists every role of every algorithm, as the configs declare them.

Its section "The roles of each algorithm" opens with one table, a row per algorithm:

    | `algorithm:` | its roles (`roles.<name>`) | table |
    | `taiscore` | `actor`, `critic`, `judge` | [TAIScore, refine, controls](#taiscore-refine-controls-...) |

Read against the code: the algorithms are the runner's (`runner._experiments()`, all six), and
each row names exactly the roles of that algorithm's config (the fields of its `roles` model,
`default` aside). The link names the section whose table documents those roles: a
`| \\`role\\` |` row for each, whose last column gives each use of a role with several
(`response`, `revision`) and the default decoding (T, top-p where it is not 1, max tokens,
`scoring:` of a scoring role), as the role's pydantic default has them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from coevo.core.types import Sampling
from coevo.run.runner import _experiments

PAGE = Path(__file__).resolve().parents[1] / "docs" / "config.md"
SECTION = "## The roles of each algorithm"
ROW = re.compile(r"^\|\s*`(?P<algorithm>[a-z_]+)`\s*\|(?P<roles>[^|]*)\|\s*\[[^\]]*\]\(#(?P<anchor>[^)]+)\)\s*\|\s*$",
                 re.M)


def section(markdown: str) -> str:
    """The page's role section: from its heading to the next `## ` heading."""
    assert SECTION in markdown, f"config.md has no {SECTION!r}"
    return re.split(r"^## ", markdown.split(SECTION, 1)[1], maxsplit=1, flags=re.M)[0]


def listed_roles(markdown: str) -> dict[str, tuple[list[str], str]]:
    """algorithm -> (the roles its row names, the anchor of its table), from the table."""
    return {m["algorithm"]: (re.findall(r"`([a-z_]+)`", m["roles"]), m["anchor"])
            for m in ROW.finditer(section(markdown))}


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it (tests/test_doc_links.py checks the links)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def role_table(markdown: str, anchor: str) -> str:
    """The text under the `### ` heading whose anchor is `anchor`, to the next heading."""
    parts = re.split(r"^(#{2,3} .*)$", section(markdown), flags=re.M)
    for heading, body in zip(parts[1::2], parts[2::2]):
        if heading.startswith("### ") and slug(heading[4:]) == anchor:
            return body
    raise AssertionError(f"config.md's role section has no ### heading for #{anchor}")


def config_roles(config: type[BaseModel]) -> dict[str, object]:
    """role name -> its default spec, from the config's `roles` model (`default` aside)."""
    role_set = config.model_fields["roles"].annotation
    return {name: field.default for name, field in role_set.model_fields.items() if name != "default"}


def uses(spec: object) -> dict[str | None, Sampling]:
    """A role's decoding defaults per use (None: a role with one), none for a role without."""
    sampling = getattr(spec, "sampling", None)
    if sampling is None:
        return {}
    if isinstance(sampling, Sampling):
        return {None: sampling}
    return {use: getattr(sampling, use) for use in type(sampling).model_fields}


def sampling_problems(row: str, spec: object) -> list[str]:
    """Where the row's last column does not give the role's uses and default decoding."""
    found = []
    column = row.strip().strip("|").split("|")[-1]
    for use, sampling in uses(spec).items():
        if use is None:
            text = column
        elif f"`{use}`" not in column:
            found.append(f"no use `{use}`")
            continue
        else:
            text = column.split(f"`{use}`", 1)[1].split(";", 1)[0]
        temperature = re.search(r"\bT (\d+(?:\.\d+)?)", text)
        if temperature is None or float(temperature[1]) != sampling.temperature:
            found.append(f"{use or 'sampling'}: T {sampling.temperature}, not {temperature and temperature[1]}")
        top_p = re.search(r"top-p (\d+(?:\.\d+)?)", text)
        if (float(top_p[1]) if top_p else 1.0) != sampling.top_p:
            found.append(f"{use or 'sampling'}: top-p {sampling.top_p}, not {top_p[1] if top_p else 'unsaid (1)'}")
        if not re.search(rf"\b{sampling.max_tokens}\b", text):
            found.append(f"{use or 'sampling'}: {sampling.max_tokens} tokens unsaid")
        scoring = getattr(sampling, "scoring", None)
        if scoring is not None and f"scoring: {scoring}" not in text:
            found.append(f"{use or 'sampling'}: `scoring: {scoring}` unsaid")
    return found


def table_problems(markdown: str, algorithm: str, config: type[BaseModel]) -> list[str]:
    """Every way config.md misdocuments `algorithm`'s roles (an empty list: it is right)."""
    listed = listed_roles(markdown)
    if algorithm not in listed:
        return [f"{algorithm}: no row in the table of algorithms"]
    names, anchor = listed[algorithm]
    roles = config_roles(config)
    found = [f"{algorithm}: role {name} is not listed" for name in roles if name not in names]
    found += [f"{algorithm}: {name} is listed but is no role of {config.__name__}" for name in names
              if name not in roles]
    table = role_table(markdown, anchor)
    for name, spec in roles.items():
        row = next((line for line in table.splitlines() if line.startswith(f"| `{name}` |")), None)
        if row is None:
            found.append(f"{algorithm}: #{anchor} has no row for {name}")
        else:
            found += [f"{algorithm}: {name}: {why}" for why in sampling_problems(row, spec)]
    return found


EXPERIMENTS = _experiments()


def test_the_table_lists_the_six_algorithms_the_runner_has():
    assert sorted(EXPERIMENTS) == ["controls", "decoevo", "refine", "rlac", "scaling", "taiscore"]
    assert sorted(listed_roles(PAGE.read_text(encoding="utf-8"))) == sorted(EXPERIMENTS)


@pytest.mark.parametrize("algorithm", sorted(EXPERIMENTS))
def test_config_md_lists_every_role_of_the_algorithm(algorithm):
    config = EXPERIMENTS[algorithm].config
    assert config_roles(config), f"{config.__name__} declares no roles"
    assert table_problems(PAGE.read_text(encoding="utf-8"), algorithm, config) == []


def test_a_missing_role_a_made_up_one_and_a_wrong_default_are_reported():
    page = PAGE.read_text(encoding="utf-8")
    config = EXPERIMENTS["scaling"].config
    dropped = page.replace("| `scaling` | `actor`, `critic`, `judge`, `gold` |",
                           "| `scaling` | `actor`, `critic`, `judge`, `referee` |")
    assert table_problems(dropped, "scaling", config) == [
        "scaling: role gold is not listed", "scaling: referee is listed but is no role of ScalingConfig"]
    no_row = page.replace("| `gold` |", "| `golden` |")
    assert table_problems(no_row, "scaling", config) == [
        "scaling: #scaling-the-zero-shot-scaling-analysis has no row for gold"]
    wrong = page.replace("| `solver` | the backbone | `answer`: T 0.7,", "| `solver` | the backbone | `answer`: T 0.9,")
    assert table_problems(wrong, "decoevo", EXPERIMENTS["decoevo"].config) == [
        "decoevo: solver: answer: T 0.7, not 0.9"]
    no_use = page.replace("`eval` (held-out, greedy)", "held-out, greedy")
    assert table_problems(no_use, "rlac", EXPERIMENTS["rlac"].config) == ["rlac: generator: no use `eval`"]
    no_row_at_all = page.replace("| `rlac` |", "| rlac |")
    assert table_problems(no_row_at_all, "rlac", EXPERIMENTS["rlac"].config) == [
        "rlac: no row in the table of algorithms"]
