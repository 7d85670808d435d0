"""CID's defaults (K, new tokens) and the range of its λ and of a sampling temperature, shared
by the requests, the decoder and the settings (a value outside is a one-line error, never an
overflow inside a batch)."""

TOP_K = 50
"""K of CID's top-K restriction (paper §2: K = 50); every default of K reads it."""
MAX_NEW_TOKENS = 20
"""New tokens CID generates by default."""
MAX_LAMBDA = 1e30
"""The largest λ computed: λ·Δ stays finite in float32, also divided by the smallest
temperature, and p̃ is the arg-max of Δ at float precision long before it."""
MIN_TEMPERATURE = 1e-6
"""The smallest sampling temperature (below it, sampling is greedy decoding)."""
MAX_TEMPERATURE = 1e6
"""The largest sampling temperature: beyond it sampling is uniform over the top-K tokens at
float precision, and a larger one overflows float32 (1e308 is ``inf`` there, and ``-inf / inf``
is NaN in the sampling distribution)."""


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
        or not MIN_TEMPERATURE <= value <= MAX_TEMPERATURE
    ):
        return (
            f"temperature must be a number from {MIN_TEMPERATURE:g} (below, sampling is greedy "
            f"decoding) to {MAX_TEMPERATURE:g} (above, it is uniform over the top-K), got "
            f"{value!r}"
        )
    return None
