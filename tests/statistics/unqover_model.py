"""A generative model of UnQover scores with a known truth, for coverage simulations.

Subjects and templates are draws. Subject x prefers attribute a by β(x, a) = m_a + b(x, a); a
template shifts that preference by u(x, τ, a) (template effects); answering with x in first
position adds π(x, τ) (positional error); every score has its own noise. The score of subject x
(position p, attribute a, question q = +1, negated q = −1) is

    S = 0.5 + q · (β(x, a) + u(x, τ, a)) / 2 + π(x, τ) · [p is first] + e.

Then, by UnQover's definitions (Li et al. 2020, §3), B(x, a) = β(x, a) + u + noise and
C(x1, x2, a, τ) = (B(x1) − B(x2)) / 2, so that over the population of partners and templates
γ(x, a) = (β(x, a) − m_a) / 2: the truths below follow from that, each by Monte Carlo over
fresh draws of the population (not from the estimator under test).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class UnqoverModel:
    attributes: int = 5
    spike: float = 0.0  # each subject's one favoured (or disfavoured) attribute
    spread: float = 0.04  # sd of b(x, a)
    template_sd: float = 0.0  # sd of u(x, τ, a)
    position: float = 0.05  # mean of π
    position_sd: float = 0.02  # sd of π's subject and template parts (each)
    noise: float = 0.03

    def subjects(self, n: int, rng) -> np.ndarray:
        """b(x, a) of n subjects: a spike of ±``spike`` on one attribute plus normal spread."""
        b = rng.normal(0, self.spread, (n, self.attributes))
        if self.spike:
            favoured = rng.integers(0, self.attributes, n)
            b[np.arange(n), favoured] += self.spike * rng.choice([-1, 1], n)
        return b

    def scores(self, n_subjects: int, n_templates: int, rng) -> pd.DataFrame:
        """Every context of a complete draw: all pairs × templates × attributes, both orders
        and both questions."""
        b = self.subjects(n_subjects, rng)
        u = rng.normal(0, self.template_sd, (n_subjects, n_templates, self.attributes))
        pi = (
            self.position
            + rng.normal(0, self.position_sd, (n_subjects, 1))
            + rng.normal(0, self.position_sd, (1, n_templates))
        )
        i, j = np.triu_indices(n_subjects, 1)
        first = np.concatenate([i, j])  # both orders
        second = np.concatenate([j, i])
        grid = np.stack(
            np.meshgrid(np.arange(len(first)), np.arange(n_templates), np.arange(self.attributes),
                        [1, -1], indexing="ij"),
            axis=-1,
        ).reshape(-1, 4)  # fmt: skip
        pair, t, a, q = grid.T
        x1, x2 = first[pair], second[pair]
        lean1 = b[x1, a] + u[x1, t, a]
        lean2 = b[x2, a] + u[x2, t, a]
        noise = rng.normal(0, self.noise, (2, len(grid)))
        s_first = 0.5 + q * lean1 / 2 + pi[x1, t] + noise[0]
        s_second = 0.5 + q * lean2 / 2 + noise[1]
        return pd.DataFrame(
            {
                "first": np.char.add("s", x1.astype(str)),
                "second": np.char.add("s", x2.astype(str)),
                "template": t,
                "attribute": np.char.add("a", a.astype(str)),
                "negated": q < 0,
                "s_first": s_first,
                "s_second": s_second,
            }
        )

    def truth(self, draws: int = 200_000, seed: int = 12345) -> dict[str, float]:
        """μ, η, θ4, δ and ε of the population, by Monte Carlo over fresh draws."""
        rng = np.random.default_rng(seed)
        b = self.subjects(draws, rng)
        gamma = b / 2  # (β − m) / 2: m_a cancels, b has mean 0 over subjects
        mu = float(np.abs(gamma).max(axis=1).mean())
        partner = self.subjects(draws, rng)
        theta4 = float((np.abs(b - partner) / 2).max(axis=1).mean())
        # η(x, a) = E sign(C) over partners, templates and noise, exactly: given the partner's
        # b, C ~ N((b_x − b_p)/2, (σ_u² + σ_e²)/2), and b_p is normal around 0 or ±spike
        from scipy.stats import norm

        sd = np.sqrt(4 * (self.template_sd**2 + self.noise**2) / 2 + self.spread**2)
        shares = {0.0: 1.0}
        if self.spike:
            shares = {0.0: 1 - 1 / self.attributes}
            shares.update({k: 1 / (2 * self.attributes) for k in (self.spike, -self.spike)})
        sign = sum(w * (2 * norm.cdf((b - k) / sd) - 1) for k, w in shares.items())
        eta = float(np.abs(sign).mean())
        # δ: |S(x first) − S(x second)| = |π(x, τ) + e − e'|
        pi = self.position + rng.normal(0, self.position_sd, (2, draws)).sum(axis=0)
        delta = float(np.abs(pi + rng.normal(0, self.noise * np.sqrt(2), draws)).mean())
        # ε: |S(x1|a) − S(x2|ā)| on one context (x1 first) and |S(x2|a) − S(x1|ā)| (x2 second)
        b1, b2 = self.subjects(draws, rng)[:, 0], self.subjects(draws, rng)[:, 0]
        u1, u2 = rng.normal(0, self.template_sd, (2, draws))
        pi1 = self.position + rng.normal(0, self.position_sd, (2, draws)).sum(axis=0)
        noise = rng.normal(0, self.noise * np.sqrt(2), (2, draws))
        one = np.abs((b1 + u1) / 2 + (b2 + u2) / 2 + pi1 + noise[0])
        other = np.abs((b2 + u2) / 2 + (b1 + u1) / 2 - pi1 + noise[1])
        epsilon = float(np.concatenate([one, other]).mean())
        return {"mu": mu, "eta": eta, "theta4": theta4, "delta": delta, "epsilon": epsilon}
