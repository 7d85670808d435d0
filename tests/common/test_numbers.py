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
        # the report's old mix (3.354e-05 beside 0.0070): a value below 0.001 puts the whole
        # column in three significant digits, the notation readable() gives it alone
        ([3.354e-05, 0.0070, 0.25], ["3.35e-05", "7.00e-03", "2.50e-01"]),
        ([1.52e-05, 0.014116], ["1.52e-05", "1.41e-02"]),
        ([0.0218, 1.5, -2.0], ["0.0218", "1.5000", "-2.0000"]),
        ([4.2e-08, 0.5], ["4.20e-08", "5.00e-01"]),
        ([0.0, 5.0, 50.0], ["0", "5", "50"]),
        ([float("nan"), "x", 3, 0.125], [None, None, None, "0.1250"]),
    ],
)
def test_a_column_has_one_notation(values, texts):
    from biaslens.common.numbers import readable_column

    assert readable_column(values) == texts
