"""What a headline number means: its definition, range, the value that says "no bias", which way
is better, its unit and the sampling unit its interval and n count.

Each metric module declares its :class:`Measure`\\ s beside the code that computes them; a
method's headline tables name the measures they hold, and the same text is shown by
``biaslens run METHOD --help``, the terminal summary, ``summary.json`` (``estimates``), the
report and "Reading the results" (README and docs/reading.md).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Measure:
    """One headline metric, a column of a result table.

    ``ci``: the prefix of its interval columns (``{ci}_ci_low`` / ``{ci}_ci_high``; default the
    column); ``n``: the column counting the units its interval rests on (or a ``+`` of two);
    ``reference``: the number that reads as "no bias" (a bias measure's 0), against which an
    interval is checked; None where no single number does (a detector's rates); ``estimand``:
    what population the number describes and what its interval covers; ``conservative``: the
    interval covers at least its level by construction (more near ties); ``caution``: the
    column of a row's warning that its value is not to be read as it stands (e.g. UnQover's
    sparse cells)."""

    column: str
    symbol: str
    definition: str
    range: str
    no_bias: str
    better: str
    unit: str
    n: str | None = None
    n_unit: str = ""
    ci: str | None = None
    interval: str = ""
    reference: float | None = None
    estimand: str = ""
    conservative: bool = False
    caution: str | None = None
    crossfit: str | None = None
    """The column of its cross-fitted value, for a plug-in biased upwards (a maximum over
    noisy means): where that value is below half the plug-in, the plug-in is mostly noise
    (:func:`mostly_noise`)."""
    estimand_by: tuple[str, tuple[tuple[str, str], ...]] | None = None
    """(column, ((value, estimand), …)): where a row's ``column`` holds one of the values, the
    row's estimand is that text (UnQover's subjects drawn or fixed); else :attr:`estimand`."""

    def estimand_of(self, row) -> str:
        """What this row's value estimates."""
        if self.estimand_by is not None:
            column, texts = self.estimand_by
            return dict(texts).get(row.get(column), self.estimand)
        return self.estimand

    @property
    def ci_prefix(self) -> str:
        return self.ci or self.column

    def column_meaning(self) -> str:
        """The meaning of its column in a run's files (the results reference, ``biaslens
        schema``): declared here once, not again beside the file."""
        target = "no bias" if self.reference is not None else "best"
        return f"{self.symbol}: {self.definition} ({self.range}; {target}: {self.no_bias})"

    def line(self) -> str:
        """One line: what it is, its range, what no bias reads as, which way is better."""
        # a number without a no-bias value (a detector's rate) has a best value instead
        target = "no bias" if self.reference is not None else "best"
        line = (
            f"{self.symbol}: {self.definition}; range {self.range}; {target}: {self.no_bias}; "
            f"{self.better}"
        )
        return f"{line}. Estimates {self.estimand}" if self.estimand else line

    def holds_reference(self, low: float | None, high: float | None) -> bool | None:
        """Whether the interval [low, high] includes the no-bias value (None: no interval or no
        such value). For a conservative interval of a quantity that cannot go below its no-bias
        value (μ ≥ 0), the lower bound is a one-sided test of no bias: it holds the value
        exactly when that test does not reject."""
        if self.reference is None or low is None or high is None:
            return None
        return bool(low <= self.reference <= high)

    def n_of(self, row) -> int | None:
        """The units behind this row's value (None where the table does not count them)."""
        if not self.n:
            return None
        total = 0
        for part in self.n.split("+"):
            value = row.get(part.strip())
            if value is None or value != value:
                return None
            total += int(value)
        return total


NOISE_SHARE = 0.5
"""A plug-in whose cross-fitted value is below this share of it is marked "mostly noise"."""


def mostly_noise(plugin: float | None, crossfit: float | None) -> bool:
    """Whether more than half of a plug-in value is the upward bias of a maximum over noisy
    means: its cross-fitted value (selection and estimate on parts that share neither
    templates nor partners) is below :data:`NOISE_SHARE` of it."""
    if plugin is None or crossfit is None or plugin != plugin or crossfit != crossfit:
        return False
    return plugin > 0 and crossfit < NOISE_SHARE * plugin
