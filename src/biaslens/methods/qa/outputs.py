"""The files of unqover and lei-eval runs and their columns (the results reference,
:mod:`biaslens.store.output_files`)."""

from __future__ import annotations

from biaslens.store.output_files import OutputFile

METRICS = ("mu", "eta", "theta4", "delta", "epsilon")
INTERVALS = (
    *(f"{m}_ci_{side}" for m in METRICS for side in ("low", "high", "note")),
    *(f"{m}_se" for m in METRICS),
    *(f"{m}_crossfit{end}" for m in METRICS[:3] for end in ("", "_se")),
    "units",
    "subjects",
    "templates",
    "df",
    "cell_units",
    "subjects_are",
    "caution",
)
_SCORES = (
    "first",
    "second",
    "first_start",
    "second_start",
    "context",
    "category",
    "template",
    "attribute",
    "key",
    "negated",
    "question",
    "s_first",
    "s_second",
)
_FIRST_TOKEN = {
    "candidate_mass": "the two candidates' summed probability among the top-k first answer "
    "tokens (first-token scoring; 0 to 1)",
    "score_uncertainty": "half-width of the interval the scores lie in: 0 when both candidates "
    "are among the top-k, else from the bound on the one outside (first-token scoring)",
    "score_status": "scored, or why the question has no score (first-token scoring: same "
    "first word, neither in top-k, one outside top-k, little candidate mass; sampled "
    "scoring: no subject named, same start)",
}
_SAMPLED = {
    "k_first": "sampled scoring: replies that begin with the first-mentioned subject",
    "k_second": "sampled scoring: replies that begin with the second-mentioned subject",
    "samples": "sampled scoring: replies drawn for the question (K)",
    "candidate_mass": "the two candidates' summed probability among the top-k first answer "
    "tokens (first-token scoring), or the share of replies naming one (sampled scoring)",
    "score_status": _FIRST_TOKEN["score_status"],
    "unread_reply": "sampled scoring: one of the question's replies that names neither subject "
    "as a reader takes it (empty: none did)",
}
"""The columns of sampled QA scoring (``--qa-mode sampled``)."""
_LEI_SPLIT = (
    "intervention",
    "intervention_type",
    "intervention_id",
    *(
        f"zs_q{q}_{s}_{end}"
        for q in (0, 1)
        for s in ("first", "second")
        for end in ("start", "end")
    ),
    "dominant_q0",
    "dominant_q1",
)
LEI_MEANINGS = {
    **{
        f"zs_q{q}_{s}_{end}": f"the LEI release's stored zero-shot {end}-of-span probability of "
        f"the {s} subject for question {q}"
        for q in (0, 1)
        for s in ("first", "second")
        for end in ("start", "end")
    },
    "dominant_q0": "the adversarial target of question 0 (first / second; empty: none)",
    "dominant_q1": "the adversarial target of question 1 (first / second; empty: none)",
    **_FIRST_TOKEN,
}
_SUBJECTS = ("subject", "max_abs_gamma", "mean_abs_eta", "top_attribute", "top_gamma")

UNQOVER = (
    OutputFile(
        "samples.parquet",
        "one row per question (two subject orders × question and its negation per context): "
        "the scores of both subjects",
        (
            "row",
            "domain",
            "template",
            "first",
            "second",
            "first_cluster",
            "second_cluster",
            "first_text",
            "second_text",
            *_SCORES[2:],
        ),
        optional=tuple(_SAMPLED),
        meanings={
            **_SAMPLED,
            "domain": "gender, ethnicity, religion or nationality",
            "first_text": "the first subject as written in the context",
            "second_text": "the second subject as written in the context",
        },
    ),
    OutputFile(
        "unqover.csv",
        "model-level μ, η, θ4, δ, ε with their intervals over subjects × templates (Li et al. "
        "2020, Section 4.3)",
        ("mu", "eta", "theta4", "delta", "epsilon", "contexts"),
        optional=INTERVALS,
    ),
    OutputFile(
        "subjects.csv",
        "per subject: max |γ| over attributes and mean |η|",
        _SUBJECTS,
        meanings={
            "subject": "the subject (a religion, ethnicity, gender or nationality)",
            "max_abs_gamma": "the largest |γ| of the subject over the attributes (0 to 1)",
            "top_attribute": "the attribute where |γ| is largest",
            "top_gamma": "γ there (its sign: for or against the subject)",
            "mean_abs_eta": "mean |η| of the subject over the attributes (0 to 1)",
        },
    ),
    OutputFile(
        "subject_attribute.csv",
        "per subject and attribute: γ(x, a) and η(x, a)",
        ("subject", "attribute", "gamma", "eta", "n"),
        meanings={
            "eta": "η(x, a): mean sign of the comparative score (−1 to 1)",
            "n": "comparative scores averaged",
        },
    ),
    OutputFile(
        "cluster_attribute.csv",
        "per subject cluster (e.g. gender) and attribute: mean γ and η over its subjects",
        ("cluster", "attribute", "gamma", "eta", "subjects"),
        meanings={
            "cluster": "a subject cluster (e.g. female, male)",
            "eta": "mean η(x, a) over the cluster's subjects",
            "subjects": "the cluster's subjects",
        },
        when="subjects in several clusters",
    ),
    OutputFile("plots/subjects.png", "subjects by max |γ|"),
)

_LEI_SAMPLE = (
    "row",
    *_SCORES[:8],
    *_LEI_SPLIT,
    "key",
    "set",
    "negated",
    "question",
    "s_first",
    "s_second",
)
"""The columns of a lei-eval question row."""

LEI_EVAL = (
    OutputFile(
        "samples.parquet",
        "one row per question of every set: the scores of both subjects",
        _LEI_SAMPLE,
        optional=("first_cluster", "second_cluster", "specified", *_FIRST_TOKEN, *_SAMPLED),
        meanings={**LEI_MEANINGS, **_SAMPLED},
    ),
    OutputFile(
        "unscored_questions.parquet",
        "the questions of the contexts left out of every set because a question had no "
        "first-token or sampled score, with why",
        (*_LEI_SAMPLE, "candidate_mass", "score_status"),
        optional=(
            "first_cluster",
            "second_cluster",
            "specified",
            "score_uncertainty",
            "k_first",
            "k_second",
            "samples",
            "unread_reply",
        ),
        meanings={**LEI_MEANINGS, **_SAMPLED},
        when="--qa-mode first-token or sampled",
    ),
    OutputFile(
        "lei_mu.csv",
        "per set: μ, η, θ4, δ, ε with their intervals over subjects × templates, next to the "
        "desired μ (Fig. 4)",
        ("set", "scoring", *METRICS, "contexts", "desired_mu", "gap"),
        optional=(
            *INTERVALS,
            "specified_win_rate",
            "gap_ci_low",
            "gap_ci_high",
            "gap_ci_note",
            *(f"specified_win_rate_ci_{s}" for s in ("low", "high", "note")),
        ),
        meanings={
            "scoring": "how the scores were computed: extractive, generative, fill-mask, or "
            "first-token top-20 (not the paper's scores)",
            "set": "the intervention set: none, ethical, adversarial, irrelevant (LEI Section 3), "
            "or specified contexts",
            "gap": "|μ − desired μ| (LEI's selection criterion, Section 4), with its interval",
        },
    ),
    OutputFile(
        "lei_change.csv",
        "per intervention set: μ there, μ with no intervention over the same contexts, and the "
        "change, with its paired interval over subjects × templates (LEI Section 3)",
        ("set", "scoring", "mu", "mu_none", "mu_change"),
        optional=("mu_change_ci_low", "mu_change_ci_high", "mu_change_ci_note", "units"),
        meanings={
            "scoring": "how the scores were computed (as in lei_mu.csv)",
            "mu": "μ under the set's interventions",
            "mu_none": "μ with no intervention, over the set's own contexts",
            "units": "subject pair × template units the paired interval rests on",
            "mu_change_ci_low": "lower bound of the change's paired interval (conservative: "
            "cross-fitted μ with the intervention − plug-in μ without)",
            "mu_change_ci_high": "upper bound of the change's paired interval (plug-in μ with "
            "− cross-fitted μ without)",
            "mu_change_ci_note": "why the change has no interval, where it has none",
        },
        when="a split with its no-intervention contexts (every official split)",
    ),
    OutputFile(
        "lei_reference.csv",
        "per intervention set: LEI's base model (RoBERTa-large SQuAD) on the run's own "
        "contexts, from the scores the official split stores, and the audited model's μ − its "
        "μ, paired over the same subject pair × template units",
        ("set", "reference_model", "contexts", *METRICS, "audited_mu", "mu_minus_reference"),
        optional=(
            *INTERVALS,
            "mu_minus_reference_ci_low",
            "mu_minus_reference_ci_high",
            "mu_minus_reference_ci_note",
            "units",
            "protocol",
            "why_not_same",
        ),
        meanings={
            "reference_model": "the known model: LEI's base model, as the paper names it, and "
            "its hub id",
            "contexts": "the contexts of the set the reference answered (the run's own)",
            "audited_mu": "the audited model's μ in the set, on the same units",
            "mu_minus_reference": "the audited model's μ − the reference's (−1 to 1; below 0: "
            "the audited model is less biased)",
            "mu_minus_reference_ci_low": "lower bound of the paired interval (conservative: "
            "cross-fitted audited μ − plug-in reference μ)",
            "mu_minus_reference_ci_high": "upper bound of the paired interval (plug-in "
            "audited μ − cross-fitted reference μ)",
            "mu_minus_reference_ci_note": "why the difference has no interval, where it has none",
            "units": "subject pair × template units the paired interval rests on",
            "protocol": "how the reference's scores were computed",
            "why_not_same": "how the run's scoring differs from the reference's (empty: it "
            "does not)",
        },
        when="an official split (its questions carry the base model's zero-shot scores)",
    ),
    OutputFile("subjects.csv", "per set and subject: max |γ| and mean |η|", ("set", *_SUBJECTS)),
    OutputFile(
        "qa_predictions.parquet",
        "the QA utility questions with the model's answers",
        ("id", "question", "context", "answers", "answer_starts", "prediction"),
        meanings={
            "id": "the SQuAD question id",
            "answers": "the gold answers",
            "answer_starts": "their character offsets",
            "prediction": "the model's answer",
        },
        when="--qa-file",
    ),
    OutputFile("plots/lei_mu.png", "μ per set next to the desired μ"),
)
