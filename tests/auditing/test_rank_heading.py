"""comparison.md's ranks say what rank 1 means in the direction of bias."""

from types import SimpleNamespace

from biaslens.auditing.compare import rank_heading


def test_rank_one_reads_in_the_direction_of_bias():
    mu = SimpleNamespace(better="lower is less biased", no_bias="0")
    accuracy = SimpleNamespace(better="higher is better", no_bias="1")
    slope = SimpleNamespace(better="closer to 0 is less biased", no_bias="0")
    assert rank_heading(mu) == "Rank (1: the largest value, the most biased)"
    assert rank_heading(accuracy) == "Rank (1: the largest value, the best)"
    assert "not an order of bias" in rank_heading(slope) and "from 0" in rank_heading(slope)
