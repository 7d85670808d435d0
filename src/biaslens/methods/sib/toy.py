"""SIB toy SCM experiment (paper Appendix B, Fig. 2(c)/(d)).

Samples the SCM for the well-specified (γ = 1) and unspecified (γ = 0) task, summarises the
selection effect, writes the samples, summary and a figure like Fig. 2(c)/(d). No model.
"""

from __future__ import annotations

from typing import Annotated

import pandas as pd
from pydantic import Field

from biaslens.common.options import FLAG, Flag
from biaslens.framework.hooks import AuditRole
from biaslens.framework.registry import Headline, MethodOutput, MethodSpec, RunContext, register
from biaslens.framework.settings import MethodSettings, RandomSeed, validated
from biaslens.methods.sib.data.toy_scm import sample_toy_scm
from biaslens.methods.sib.metrics.toy_scm import (
    selection_probability,
    too_few_selected,
    toy_summary,
)
from biaslens.methods.sib.outputs import TOY as SIB_FILES_TOY

METHOD = "sib-toy"
GAMMAS = {"well-specified": 1.0, "unspecified": 0.0}


class ToySettings(MethodSettings):
    n: Annotated[int, Flag("--n")] = Field(
        default=100_000, ge=100, le=100_000_000, description="Samples per task."
    )
    alpha: Annotated[float, FLAG] = Field(
        default=10.0, gt=0, le=1e6, description="Noise amplification α of App. B."
    )
    seed: RandomSeed = 0


def make_settings(**values) -> ToySettings:
    """Settings from keyword values (one-line errors), as the runner builds them."""
    return validated(ToySettings, values)


def run(ctx: RunContext, settings: ToySettings) -> MethodOutput:
    from biaslens.methods.sib.plots import toy_scm_figure

    samples, rows, notes = [], [], []
    for offset, (task, gamma) in enumerate(GAMMAS.items()):
        sample = sample_toy_scm(settings.n, gamma, settings.alpha, settings.seed + offset)
        sample.insert(0, "task", task)
        sample.insert(1, "gamma", gamma)
        samples.append(sample)
        summary = toy_summary(sample)
        rows.append({"task": task, "gamma": gamma, **summary})
        notes += [note for note in [too_few_selected(task, summary)] if note]
    table = pd.DataFrame(rows)
    all_samples = pd.concat(samples, ignore_index=True)
    return MethodOutput(
        metrics={
            "tasks": table.to_dict(orient="records"),
            "analytic_selected_fraction": selection_probability(settings.alpha),
        },
        tables={"toy_summary": table},
        samples={"samples": all_samples},
        figures={"toy_scm": toy_scm_figure(all_samples)},
        notes=notes,
    )


def _view(table: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "task": table["task"],
            "γ": table["gamma"].map("{:g}".format),
            "selected": table["selected_fraction"].map("{:.2%}".format),
            "W–G all": table["corr_WG_all"],
            "W–G sel.": table["corr_WG_selected"],
            "X–Y all": table["corr_XY_all"],
            "X–Y sel.": table["corr_XY_selected"],
        }
    )


SPEC = register(
    MethodSpec(
        audit=AuditRole(skip="simulates the paper's toy causal model: it asks no model anything"),
        outputs=SIB_FILES_TOY,
        name=METHOD,
        title="SIB toy structural causal model: selection correlates W and G (App. B)",
        settings=ToySettings,
        body=run,
        # The defaults are App. B's model: nothing to change for the paper.
        presets={"paper": {"n": 50_000}},  # the reference notebook's num_samples
        needs_model=False,
        description=(
            "Fig. 2(c)/(d): how sample selection correlates W and G, and how that leaks into X "
            "vs Y only for the unspecified task."
        ),
        headlines=(
            Headline(
                "toy_summary",
                "Toy SCM: correlations before and after selection",
                view=_view,
                legend={
                    "γ": "γ in X := W + γ·G + N(0,1) and Y := γ·X + G + N(0,1)",
                    "W–G all": "correlation of W and G over all samples (0 by construction)",
                    "W–G sel.": "correlation of W and G among the selected samples: the "
                    "selection makes W stand in for G",
                    "X–Y all": "correlation of the input X and the label Y over all samples",
                    "X–Y sel.": "correlation of X and Y among the selected samples",
                },
            ),
        ),
    )
)
