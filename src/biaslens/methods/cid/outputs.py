"""The files of cid, cid-audit and cid-sensitivity runs and their columns (the results reference,
:mod:`biaslens.store.output_files`)."""

from __future__ import annotations

from biaslens.store.output_files import OutputFile

_DECODED = (
    "pair",
    "lam",
    "direction",
    "input",
    "contrast",
    "continuation",
    "num_tokens",
    "finish_reason",
)
_DECODED_MEANINGS = {
    "direction": "which input of the pair is decoded (the other is the contrast)",
    "contrast": "the contrastive input x′",
    "num_tokens": "tokens generated",
    "finish_reason": "why decoding stopped (stop string, end of text, length)",
}

PAIR = (
    OutputFile(
        "continuations.csv",
        "per λ and direction: the contrastive continuation of one pair of inputs",
        ("lam", "direction", "input", "contrast", "continuation", "num_tokens", "finish_reason"),
        meanings=_DECODED_MEANINGS,
    ),
)

AUDIT = (
    OutputFile(
        "samples.parquet",
        "one row per decoded prompt and λ: the contrastive continuation",
        (*_DECODED, "group", "name", "contrast_name"),
        meanings={
            **_DECODED_MEANINGS,
            "name": "the name in the prompt",
            "contrast_name": "the name in the contrastive prompt",
        },
    ),
    OutputFile(
        "continuations.csv",
        "per group and λ: each distinct continuation and how often it was generated",
        ("group", "lam", "continuation", "count"),
    ),
    OutputFile(
        "ratings_to_fill.csv",
        "the continuations to rate: fill `biased` (0 or 1), then `biaslens cid-ratings`",
        ("id", "group", "lam", "continuation", "count", "biased"),
        meanings={
            "id": "the continuation's id (kept when rating)",
            "biased": "your rating: 1 biased, 0 not (empty in the export)",
        },
    ),
    OutputFile(
        "ratings.csv",
        "the imported ratings",
        ("id", "group", "lam", "continuation", "count", "biased"),
        meanings={"id": "the continuation's id", "biased": "the rating: 1 biased, 0 not"},
        when="after cid-ratings",
    ),
    OutputFile(
        "biased_fraction.csv",
        "per group and λ: the fraction of continuations rated biased, with its interval over "
        "both groups' names (Fig. 2)",
        ("group", "lam", "biased", "continuations", "fraction_biased"),
        optional=("fraction_ci_low", "fraction_ci_high", "fraction_ci_note", "pairs", "names"),
        meanings={
            "biased": "continuations rated biased (weighted by count)",
            "continuations": "continuations rated",
            "fraction_ci_low": "lower bound of its t interval over the crossed design of the "
            "two groups' names",
            "fraction_ci_high": "upper bound of that interval",
            "fraction_ci_note": "why there is no interval (empty: there is one)",
            "pairs": "name pairs in the cell",
            "names": "the fewer of the two groups' names (the interval's n)",
        },
        when="after cid-ratings",
    ),
    OutputFile("plots/*.png", "continuations per λ; the biased fraction after cid-ratings"),
)

_PERTURBATION = {
    "type": "the perturbation type (Section 5)",
    "x": "the input",
    "x_prime": "its perturbation",
}
SENSITIVITY = (
    OutputFile(
        "continuations.parquet",
        "one row per decoded input and λ: the contrastive continuation",
        _DECODED,
        meanings=_DECODED_MEANINGS,
    ),
    OutputFile(
        "samples.parquet",
        "per pair and λ: the two continuations and their similarity",
        ("pair", "lam", "text_x_prime", "text_x", "similarity", "type", "x", "x_prime"),
        meanings={
            "text_x": "the continuation of x contrasted with x′",
            "text_x_prime": "the continuation of x′ contrasted with x",
            "similarity": "cosine similarity of their sentence embeddings (−1 to 1)",
            **_PERTURBATION,
        },
    ),
    OutputFile(
        "lambda_star.csv",
        "per pair: λ*, the smallest λ whose similarity falls below τ (Section 5)",
        ("pair", "type", "x", "x_prime", "lambda_star"),
        meanings={
            **_PERTURBATION,
            "lambda_star": "λ* (empty: never below τ on the grid)",
        },
    ),
    OutputFile(
        "lambda_star_summary.csv",
        "per perturbation type: λ*'s median and quartiles (Fig. 4)",
        ("type", "n", "median", "q25", "q75", "n_never"),
        optional=("median_ci_low", "median_ci_high", "median_ci_note"),
        meanings={
            "type": _PERTURBATION["type"],
            "n": "pairs",
            "q25": "the first quartile of λ* over the pairs",
            "q75": "the third quartile of λ* over the pairs",
            "n_never": "pairs whose similarity never fell below τ",
            "median_ci_low": "lower bound of the median's distribution-free order-statistic "
            "interval (covers at least --ci-level)",
            "median_ci_high": "upper bound of that interval (may be ∞)",
            "median_ci_note": "why there is no interval (too few pairs; empty: there is one)",
        },
    ),
    OutputFile(
        "similarity_vs_lambda.csv",
        "per λ: mean and standard deviation of the similarity over pairs (Fig. 9)",
        ("lam", "mean", "std", "n"),
        meanings={"mean": "mean similarity", "std": "its standard deviation", "n": "pairs"},
    ),
    OutputFile("plots/*.png", "λ* per type; similarity against λ"),
)
