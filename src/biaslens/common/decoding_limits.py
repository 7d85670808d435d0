"""The range of CID's λ and of a sampling temperature, shared by the requests, the decoder and the
settings (a value outside is a one-line error, never an overflow inside a batch)."""

MAX_LAMBDA = 1e30
"""The largest λ computed: λ·Δ stays finite in float32, also divided by the smallest
temperature, and p̃ is the arg-max of Δ at float precision long before it."""
MIN_TEMPERATURE = 1e-6
"""The smallest sampling temperature (below it, sampling is greedy decoding)."""


def lambda_problem(value: object) -> str | None:
    """Why ``value`` cannot be a λ (None: it can)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        return f"λ must be >= 0 (λ = 0 is plain decoding), got {value!r}"
    if value > MAX_LAMBDA:
        return (
            f"λ must be <= {MAX_LAMBDA:g} (beyond, p̃ is already the arg-max of Δ at float "
            f"precision), got {value!r}"
        )
    return None


def temperature_problem(value: object) -> str | None:
    """Why ``value`` cannot be a sampling temperature (None: it can)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not MIN_TEMPERATURE <= value < float("inf")
    ):
        return (
            f"temperature must be a finite number >= {MIN_TEMPERATURE:g} (below, sampling is "
            f"greedy decoding), got {value!r}"
        )
    return None
