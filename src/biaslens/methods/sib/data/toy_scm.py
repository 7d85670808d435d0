"""The toy structural causal model of the SIB paper (Appendix B, Fig. 2).

    G := α·N(0,1)                      latent gender
    W := α/2·N(0,1)                    latent time/place
    S := (W + G + N(0,1)) > 2α         sample selection (keeps ~4-5%)
    X := W + γ·G + N(0,1)              input
    Y := γ·X + G + N(0,1)              output

γ = 1 is the well-specified task (G → X → Y), γ = 0 the unspecified one. Selection makes W and
G correlated in the sample; only in the unspecified task does that leak into X vs Y.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from biaslens.errors import BiaslensError


def sample_toy_scm(n: int, gamma: float, alpha: float = 10.0, seed: int = 0) -> pd.DataFrame:
    """Draw ``n`` rows of (G, W, S, X, Y) with a seeded generator; S is boolean."""
    if n < 1:
        raise BiaslensError(f"n must be >= 1, got {n}")
    if alpha <= 0:
        raise BiaslensError(f"alpha must be > 0, got {alpha}")
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal((5, n))
    g = alpha * noise[0]
    w = alpha / 2 * noise[1]
    s = (w + g + noise[2]) > 2 * alpha
    x = w + gamma * g + noise[3]
    y = gamma * x + g + noise[4]
    return pd.DataFrame({"G": g, "W": w, "S": s, "X": x, "Y": y})
