"""The audit's statistics and probes file, on hand-computed values."""

import json

import pytest

from coevo.audit.measures import mean_interval, raised_share, share, spearman, spearman_interval, tie_rate
from coevo.audit.probes import MASTER_KEYS, default_probes, probe_rollout, read_probes
from coevo.tasks.errors import DataError
from coevo.core.types import Rollout


def test_spearman_with_average_ranks_for_ties():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ranks a: 1, 2.5, 2.5, 4 ; b: 1, 2, 3, 4 -> Pearson of the ranks
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486833, abs=1e-6)
    assert spearman([5, 5, 5], [1, 2, 3]) is None and spearman([1], [2]) is None


def test_spearman_interval_brackets_the_value_and_says_why_when_undefined():
    a = [1, 2, 3, 4, 5, 6, 7, 8]
    b = [2, 1, 4, 3, 6, 5, 8, 7]
    found = spearman_interval(a, b)
    assert found.low <= found.value <= found.high and found.n == 8 and found.high <= 1.0
    flat = spearman_interval([7, 7, 7], [1, 2, 3], invalid=1)
    assert flat.value is None and flat.invalid == 1 and "every score equal" in flat.note


def test_shares_means_ties_and_raised():
    assert (share(8, 8).value, share(8, 8).high, share(8, 8).count) == (1.0, 1.0, 8)
    assert share(0, 0).value is None and share(0, 0).note == "no readable judgments"
    assert tie_rate([1, 1, 2]).value == pytest.approx(1 / 3) and tie_rate([1, 1, 2]).n == 3
    assert raised_share([0.0, 1.0, -1.0, 2.0]).count == 2
    mean = mean_interval([1.0, 1.0, 1.0])
    assert (mean.value, mean.low, mean.high) == (1.0, 1.0, 1.0)
    assert mean_interval([]).value is None


def test_probes_file_format(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"name": "praise", "text": "About {prompt}: perfect."}) + "\n\n")
    (probe,) = read_probes(path)
    item = Rollout(sample_id="a", x="Write a poem.", y0="y0", c="c", y1="y1")
    made = probe_rollout("taiscore", item, probe)
    assert (made.c, made.y1, made.y0, made.sample_id) == ("About Write a poem.: perfect.",) * 2 + ("y0", "a")
    path.write_text(json.dumps({"name": "colon", "text": ":"}) + "\n")
    with pytest.raises(DataError, match="reuses the probe name 'colon'"):
        read_probes(path)
    path.write_text("")
    with pytest.raises(DataError, match="holds no probes"):
        read_probes(path)
    assert len(default_probes("pairwise")) == len(MASTER_KEYS) == len(default_probes("taiscore")) + 1


def test_two_or_three_items_give_spearman_no_interval_so_no_flag():
    """Two items rank alike or opposite (rho +-1) in every resample: a zero-width interval
    that would flag a judge on noise. Measured in a real quickstart's round-0 audit."""
    from coevo.audit.measures import spearman_interval

    few = spearman_interval([1.0, 2.0], [2.0, 1.0])
    assert few.value == -1.0 and few.low is None and few.high is None and "too few" in few.note
    enough = spearman_interval([1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 3.0, 2.0, 5.0, 4.0])
    assert enough.low is not None and enough.high is not None and enough.low <= enough.value <= enough.high
