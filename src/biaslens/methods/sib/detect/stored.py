"""``biaslens metrics sib-detect``: SIB Method 2 (Table 3, Fig. 5) from stored per-sentence,
per-date pronoun shares (a sib-detect run folder, or the SIB paper's released outputs), without
a model."""

from __future__ import annotations

from pathlib import Path

from biaslens.common import atomic
from biaslens.common.numbers import readable_interval
from biaslens.common.options import Argument, Option
from biaslens.data import sources
from biaslens.errors import BiaslensError
from biaslens.framework.hooks import CommandContext, MethodCommand
from biaslens.framework.options import DATA_DIR, options_of
from biaslens.framework.settings import validated
from biaslens.methods.sib.data import winogender
from biaslens.methods.sib.data.released_outputs import read_outputs
from biaslens.methods.sib.detect.settings import StoredSettings
from biaslens.methods.sib.metrics.sib import method2_from_shares


def from_stored(
    ctx: CommandContext, outputs, threshold, earliest, latest, include_tests, data_dir, output
) -> None:
    """SIB Method 2 (Table 3, Fig. 5) from stored per-sentence, per-date pronoun shares: the
    metric per sentence, and TPR / TNR / balanced accuracy per model, prompt and set."""
    chosen = validated(
        StoredSettings, {"threshold": threshold, "earliest": earliest, "latest": latest}
    )
    threshold, earliest, latest = chosen.threshold, chosen.earliest, chosen.latest
    table = read_outputs(outputs)
    if not include_tests:
        table = table[~table["test"].astype(bool)]
    sentences, rates = method2_from_shares(table, threshold, earliest, latest)
    shown = rates.copy()
    for rate in ("tpr", "tnr", "balanced_accuracy"):
        shown[f"{rate} CI"] = [
            readable_interval(lo, hi) if lo == lo else "no interval: no sentence"
            for lo, hi in zip(shown[f"{rate}_ci_low"], shown[f"{rate}_ci_high"], strict=True)
        ]
    shown["n BA"] = shown["n_tpr"] + shown["n_tnr"]
    ctx.table(
        f"Method 2 from stored outputs — {outputs.name}",
        shown.rename(
            columns={
                "tpr": "TPR",
                "tnr": "TNR",
                "balanced_accuracy": "BA",
                "tpr CI": "TPR 95% CI",
                "tnr CI": "TNR 95% CI",
                "balanced_accuracy CI": "BA 95% CI",
                "n_tpr": "n TPR",
                "n_tnr": "n TNR",
            }
        ),
        [
            "model",
            "prompt",
            "set",
            "TPR",
            "TPR 95% CI",
            "n TPR",
            "TNR",
            "TNR 95% CI",
            "n TNR",
            "BA",
            "BA 95% CI",
            "n BA",
        ],
    )
    ctx.line(
        "TPR: share of underspecified sentences flagged; TNR: share of well-specified ones "
        "cleared; BA: their mean; n: the sentences each rests on (sentences without a pronoun "
        "have no verdict); CI over occupations as clusters (their sentences share the model's "
        "behaviour): Korn–Graubard (TPR, TNR), t (BA)"
    )
    if output is None:
        return
    atomic.write_csv(output / "rates.csv", rates)
    atomic.write_csv(output / "sentences.csv", sentences)
    ctx.line(f"tables written to {output}")
    _detector_plots(ctx, sentences, threshold, data_dir, output)


def _detector_plots(ctx: CommandContext, sentences, threshold: float, data_dir, output: Path):
    """Fig. 5 per model, prompt and set (needs Winogender's occupation statistics)."""
    import matplotlib.pyplot as plt

    from biaslens.methods.sib.plots import detector_figure

    try:
        stats = winogender.load_occupation_stats(sources.locate("winogender", data_dir))
    except BiaslensError as error:
        ctx.warning(f"no plots: {error}")
        return
    merged = sentences.merge(stats, on="occupation", how="inner")
    for (model, prompt, name), part in merged.groupby(["model", "prompt", "set"], sort=True):
        figure = detector_figure(part, threshold, f"{model} {prompt} {name} Winogender".strip())
        label = "_".join(x for x in (model, prompt, name) if x)
        atomic.write_figure(output / "plots" / f"detector_{label}.png", figure)
        plt.close(figure)


FROM_STORED = MethodCommand(
    "sib-detect",
    from_stored,
    group="metrics",
    params=(
        Argument(
            "outputs",
            type=Path,
            help="A sib-detect run folder, or a folder of the SIB paper's released outputs "
            "(biaslens datasets download sib-outputs) or a .tar.gz of them.",
        ),
        *options_of(StoredSettings),
        Option(
            "include_tests", type=bool, default=False, help="Keep the reference's testTrue subsets."
        ),
        DATA_DIR,
        Option(
            "output",
            "--output",
            "-o",
            type=Path,
            help="Write rates.csv, sentences.csv and plots here.",
        ),
    ),
)
