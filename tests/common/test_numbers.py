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
