"""Numbers as printed: four decimals where they show the value, three significant digits in
scientific notation below 0.001 (never ``0.0000`` for a value that is not 0)."""

from __future__ import annotations

import pytest

from biaslens.common.numbers import readable


@pytest.mark.parametrize(
    ("value", "signed", "text"),
    [
        (0.0, False, "0.0000"),
        (0.0218, False, "0.0218"),
        (0.001, True, "+0.0010"),
        (3.354e-05, False, "3.35e-05"),
        (-0.000102, True, "-1.02e-04"),
        (6.95e-06, True, "+6.95e-06"),
        (12.5, False, "12.5000"),
        (float("nan"), False, "nan"),
    ],
)
def test_readable(value, signed, text):
    assert readable(value, signed) == text


@pytest.mark.parametrize(
    ("values", "texts"),
    [
        # the report's old mix (3.354e-05 beside 0.0070): one fixed notation, 3 significant
        # digits of the smallest value (-log10(3.354e-05) = 4.47 -> 5 + 2 decimals)
        ([3.354e-05, 0.0070, 0.25], ["0.0000335", "0.0070000", "0.2500000"]),
        ([0.0218, 1.5, -2.0], ["0.0218", "1.5000", "-2.0000"]),
        ([4.2e-08, 0.5], ["4.20e-08", "5.00e-01"]),
        ([0.0, 5.0, 50.0], ["0", "5", "50"]),
        ([float("nan"), "x", 3, 0.125], [None, None, None, "0.1250"]),
    ],
)
def test_a_column_has_one_notation(values, texts):
    from biaslens.common.numbers import readable_column

    assert readable_column(values) == texts
