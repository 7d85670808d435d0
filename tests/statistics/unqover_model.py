"""A generative model of UnQover scores with a known truth, for coverage simulations.

Subject x prefers attribute a by β(x, a) = m_a + b(x, a); a template shifts that preference by
u(x, τ, a) (template effects); answering with x in first position adds π(x, τ) = π̄ + p(x) +
p(τ) (positional error); every score has its own noise (normal, or Student's t with
``noise_df`` degrees of freedom scaled to the same sd; a subject's own sd is ``noise`` times
its factor f(x), log-normal with sd ``noise_spread``). The score of subject x (position p,
attribute a, question q = +1, negated q = −1) is

    S = 0.5 + q · (β(x, a) + u(x, τ, a)) / 2 + π(x, τ) · [p is first] + e.

Then, by UnQover's definitions (Li et al. 2020, §3), B(x, a) = β(x, a) + u + noise and
C(x1, x2, a, τ) = (B(x1) − B(x2)) / 2. Two estimands:

* **subjects drawn** (names): over the population of subjects, partners and templates,
  γ(x, a) = (β(x, a) − m_a) / 2: :meth:`UnqoverModel.truth`;
* **subjects fixed** (religions): the same subjects in every replication, templates drawn:
  γ(x, a) = (b(x, a) − mean over x's partners of b(p, a)) / 2 over the population of
  templates: :meth:`UnqoverModel.fixed_truth`.

Each truth follows from the model, by Monte Carlo over fresh draws (not from the estimator
under test).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Subjects:
    """One draw of subjects: b(x, a), the subject part p(x) of π and the noise factor f(x)."""

    b: np.ndarray
    position: np.ndarray
    noise_factor: np.ndarray

    def __len__(self) -> int:
        return len(self.b)


@dataclass(frozen=True)
class UnqoverModel:
    attributes: int = 5
    spike: float = 0.0  # each subject's one favoured (or disfavoured) attribute
    spread: float = 0.04  # sd of b(x, a)
    template_sd: float = 0.0  # sd of u(x, τ, a)
    position: float = 0.05  # mean of π
    position_sd: float = 0.02  # sd of π's subject and template parts (each)
    noise: float = 0.03
    noise_df: float | None = None  # Student's t noise of these degrees of freedom
    noise_spread: float = 0.0  # sd of log f(x), f cut to [¼, 4]: unequal noise between subjects

    def subjects(self, n: int, rng) -> np.ndarray:
        """b(x, a) of n subjects: a spike of ±``spike`` on one attribute plus normal spread."""
        b = rng.normal(0, self.spread, (n, self.attributes))
        if self.spike:
            favoured = rng.integers(0, self.attributes, n)
            b[np.arange(n), favoured] += self.spike * rng.choice([-1, 1], n)
        return b

    def draw_subjects(self, n: int, rng) -> Subjects:
        return Subjects(
            self.subjects(n, rng),
            rng.normal(0, self.position_sd, n),
            np.clip(np.exp(rng.normal(0, self.noise_spread, n)), 0.25, 4.0),
        )

    def _noise(self, rng, size) -> np.ndarray:
        """Unit-sd noise: normal, or t(noise_df) scaled to sd 1 (cut at ±8, so that every score
        stays a probability; the truths draw the same noise)."""
        if self.noise_df is None:
            return rng.normal(0, 1, size)
        t = rng.standard_t(self.noise_df, size) / np.sqrt(self.noise_df / (self.noise_df - 2))
        return np.clip(t, -8, 8)

    def scores(
        self, n_subjects: int, n_templates: int, rng, subjects: Subjects | None = None
    ) -> pd.DataFrame:
        """Every context of a complete draw: all pairs × templates × attributes, both orders
        and both questions; ``subjects``: the fixed subjects (else drawn)."""
        if subjects is None:
            subjects = self.draw_subjects(n_subjects, rng)
        n_subjects, b = len(subjects), subjects.b
        u = rng.normal(0, self.template_sd, (n_subjects, n_templates, self.attributes))
        pi = (
            self.position
            + subjects.position[:, None]
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
        noise = self._noise(rng, (2, len(grid))) * self.noise
        noise *= subjects.noise_factor[np.stack([x1, x2])]
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

    def fixed_truth(self, subjects: Subjects, draws: int = 4_000, seed: int = 12345) -> dict:
        """μ, η, θ4, δ and ε of these subjects over the population of templates and noise
        (Monte Carlo over ``draws`` templates per context; γ exactly)."""
        rng = np.random.default_rng(seed)
        b, f = subjects.b, subjects.noise_factor
        n, attributes = b.shape
        i, j = np.nonzero(~np.eye(n, dtype=bool))  # ordered pairs x ≠ p
        gamma = np.zeros((n, attributes))
        np.add.at(gamma, i, (b[i] - b[j]) / 2)
        gamma /= n - 1
        mu = float(np.abs(gamma).max(axis=1).mean())
        theta4 = float(np.abs(gamma_pair := (b[i] - b[j]) / 2).max(axis=1).mean())
        del gamma_pair

        def b_noise(x, size):
            """B's own noise: (e1 + e2 − e3 − e4) / 2 of x's four scores."""
            four = self._noise(rng, (4, *size)) * self.noise * f[x][:, None, None]
            return (four[0] + four[1] - four[2] - four[3]) / 2

        size = (len(i), attributes, draws)
        u_diff = rng.normal(0, self.template_sd, (2, *size))
        c = (b[i][..., None] - b[j][..., None] + u_diff[0] - u_diff[1]) / 2
        c += (b_noise(i, size) - b_noise(j, size)) / 2
        sign = np.zeros((n, attributes))
        np.add.at(sign, i, np.sign(c).mean(axis=2))
        eta = float(np.abs(sign / (n - 1)).mean())
        del c, u_diff
        # δ: |π(x, τ) + e − e'| with x's own noise
        x = np.repeat(np.arange(n), draws)
        pi = self.position + subjects.position[x] + rng.normal(0, self.position_sd, len(x))
        e = self._noise(rng, (2, len(x))) * self.noise * f[x]
        delta = float(np.abs(pi + e[0] - e[1]).mean())
        # ε over ordered pairs (x1 first) and attributes
        pairs = np.repeat(np.arange(len(i)), draws)
        x1, x2 = i[pairs], j[pairs]
        a = rng.integers(0, attributes, len(pairs))
        lean = (b[x1, a] + b[x2, a] + rng.normal(0, self.template_sd, (2, len(pairs))).sum(0)) / 2
        pi1 = self.position + subjects.position[x1] + rng.normal(0, self.position_sd, len(pairs))
        e = self._noise(rng, (4, len(pairs))) * self.noise
        one = np.abs(lean + pi1 + e[0] * f[x1] - e[1] * f[x2])
        other = np.abs(lean - pi1 + e[2] * f[x2] - e[3] * f[x1])
        epsilon = float(np.concatenate([one, other]).mean())
        return {"mu": mu, "eta": eta, "theta4": theta4, "delta": delta, "epsilon": epsilon}
