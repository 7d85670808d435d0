"""CID's name-swap audit on the model classes the CID paper decodes (causal and
encoder-decoder), with the defaults and ``--preset paper``: every continuation decoded again by
the naive one-example, no-cache decoder (Eq. 1 written out over the top-K), every count
recounted."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

import biaslens
from tests.decoding.naive_cid import next_token_logprobs

LOADERS = {"llama": AutoModelForCausalLM, "t5": AutoModelForSeq2SeqLM}
PAPER_TOP_K = 50
"""CID, Appendix B: "we restrict the probability mass to the top-K tokens (Fan et al., 2018)
before applying CID. We use K = 50 throughout." """
NAMES = """
tiny-a:
  gender: male
  names: [James, John]
tiny-b:
  gender: female
  names: [Omar, Emma]
"""


def naive_continuation(
    model, tokenizer, x: str, x_prime: str, lam: float, decoding, top_k: int = PAPER_TOP_K
) -> str:
    """Greedy CID one token at a time over the top-K (the paper's 50 unless told); stops at EOS
    or once the text holds a stop string (cut before it), as the request defines."""
    x_ids, x_prime_ids = tokenizer(x)["input_ids"], tokenizer(x_prime)["input_ids"]
    eos = {tokenizer.eos_token_id}
    generated = []
    for _ in range(decoding["max_new_tokens"]):
        token = naive_cid_next(model, x_ids, x_prime_ids, generated, lam, top_k)
        generated.append(token)
        text = tokenizer.decode(generated, skip_special_tokens=True)
        stops = [text.index(s) for s in decoding["stop"] if s in text]
        if stops:
            return text[: min(stops)].strip()
        if token in eos:
            break
    return tokenizer.decode(generated, skip_special_tokens=True).strip()


def naive_cid_next(model, x_ids, x_prime_ids, generated, lam, top_k) -> int:
    """The next CID token after ``generated``: full forwards of x + y and x' + y, then
    p̃(w) ∝ exp(λ·(p(w|x) − p(w|x')))·p(w|x) over the top-K of p(·|x), greedy."""
    lp_x = next_token_logprobs(model, x_ids, generated)
    lp_xp = next_token_logprobs(model, x_prime_ids, generated)
    best, best_score = None, float("-inf")
    for w in sorted(set(lp_x.topk(top_k).indices.tolist())):
        p, p_prime = float(lp_x[w].exp()), float(lp_xp[w].exp())
        score = lam * (p - p_prime) + float(lp_x[w])
        if score > best_score:
            best, best_score = w, score
    return best


def audit(name, preset, tiny_models, tmp_path):
    names = tmp_path / "names.yaml"
    names.write_text(NAMES)
    return biaslens.run(
        "cid-audit", str(tiny_models[name]), output=tmp_path / "run", preset=preset,
        groups=("tiny-a", "tiny-b"), names_file=names, max_new_tokens=6, report=False,
        device="cpu", batch_size=4,
    )  # fmt: skip


def check_audit(name, result, tiny_models):
    decoding = result.settings["decoding"]
    assert decoding["top_k"] == PAPER_TOP_K
    model = LOADERS[name].from_pretrained(tiny_models[name]).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_models[name])
    samples = pd.read_parquet(result.run_dir / "samples.parquet")
    assert len(samples) == 4 * len(decoding["lams"]) * 2  # 2 x 2 pairs, λ grid, directions
    expected_counts = Counter()
    for row in samples.to_dict("records"):
        expected = naive_continuation(
            model, tokenizer, row["input"], row["contrast"], row["lam"], decoding
        )
        assert row["continuation"] == expected, row
        expected_counts[(row["group"], row["lam"], expected)] += 1
    counts = pd.read_csv(result.run_dir / "continuations.csv", keep_default_na=False)
    got = {
        (r["group"], float(r["lam"]), str(r["continuation"])): int(r["count"])
        for r in counts.to_dict("records")
    }
    assert got == dict(expected_counts)


@pytest.mark.parametrize("preset", [None, "paper"])
@pytest.mark.parametrize("name", list(LOADERS))
def test_cid_audit_continuations_recomputed(name, preset, tiny_models, tmp_path):
    result = audit(name, preset, tiny_models, tmp_path)
    lams = tuple(result.settings["decoding"]["lams"])
    assert lams == ((0.0, 10.0, 50.0) if preset == "paper" else (0.0, 5.0, 50.0))
    check_audit(name, result, tiny_models)


def test_the_audit_check_fails_when_the_contrast_is_reversed(tiny_models, tmp_path, monkeypatch):
    """Eq. 1 with p(w|x') − p(w|x): the continuations at large λ differ from CID's."""

    def reversed_contrast(self, logprobs_x, logprobs_x_prime):
        delta = logprobs_x_prime.exp() - logprobs_x.exp()
        return self.lam.to(logprobs_x.dtype)[:, None] * delta + logprobs_x

    from biaslens.decoding import contrastive

    monkeypatch.setattr(contrastive.ContrastiveInputScaling, "__call__", reversed_contrast)
    with pytest.raises(AssertionError):
        check_audit("llama", audit("llama", None, tiny_models, tmp_path), tiny_models)


@pytest.mark.parametrize("mutated", [False, True])
def test_cid_sensitivity_lambda_star_recomputed(mutated, tiny_models, tmp_path, monkeypatch):
    """λ* (Section 5): continuations decoded again naively, similarities recomputed with the
    real all-MiniLM-L6-v2 through sentence-transformers and a plain-Python cosine, λ* = the
    smallest λ with sim < τ."""

    from sentence_transformers import SentenceTransformer

    from biaslens.models.checkpoints.packaged import minilm_path

    if mutated:  # the mutation check: each text compared with another pair's
        from biaslens.methods.cid import sensitivity  # where the method looks it up

        cosine = sensitivity.cosine_similarity
        monkeypatch.setattr(
            sensitivity, "cosine_similarity", lambda e, a, b: cosine(e, a, list(reversed(b)))
        )
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("The nurse said that she would be late because\n")
    result = biaslens.run(
        "cid-sensitivity", str(tiny_models["llama"]), output=tmp_path / "run",
        sentences_file=sentences, variants=1, types=("gender", "spelling"), lams=(0.0, 5.0, 50.0),
        max_new_tokens=4, report=False, device="cpu", batch_size=4,
    )  # fmt: skip
    decoding = result.settings["decoding"]
    model = AutoModelForCausalLM.from_pretrained(tiny_models["llama"]).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_models["llama"])
    encoder = SentenceTransformer(str(minilm_path()), device="cpu")
    samples = pd.read_parquet(result.run_dir / "samples.parquet")
    if mutated:
        with pytest.raises(AssertionError):
            check_sensitivity(result, samples, model, tokenizer, encoder, decoding)
        return
    check_sensitivity(result, samples, model, tokenizer, encoder, decoding)


def check_sensitivity(result, samples, model, tokenizer, encoder, decoding):
    import math

    tau = result.settings["tau"]
    crossings: dict[int, float] = {}
    for row in samples.to_dict("records"):
        forward = naive_continuation(
            model, tokenizer, row["x"], row["x_prime"], row["lam"], decoding
        )
        backward = naive_continuation(
            model, tokenizer, row["x_prime"], row["x"], row["lam"], decoding
        )
        a, b = encoder.encode(
            [f"{row['x']} {forward}".strip(), f"{row['x_prime']} {backward}".strip()]
        )
        cosine = sum(float(u) * float(v) for u, v in zip(a, b, strict=True)) / (
            math.sqrt(sum(float(u) ** 2 for u in a)) * math.sqrt(sum(float(v) ** 2 for v in b))
        )
        assert row["similarity"] == pytest.approx(cosine, abs=1e-5), row
        if cosine < tau:
            crossings[row["pair"]] = min(crossings.get(row["pair"], math.inf), row["lam"])
    table = pd.read_csv(result.run_dir / "lambda_star.csv").set_index("pair")
    for pair, value in table["lambda_star"].items():
        assert value == crossings.get(pair, math.inf), pair


PAIR = ("The doctor said that", "The nurse said that")


def run_pair(name, tiny_models, tmp_path, **options):
    options = {"lams": (0, 5, 50), **options}
    return biaslens.run(
        "cid", str(tiny_models[name]), x=PAIR[0], x_prime=PAIR[1], max_new_tokens=6,
        output=tmp_path / f"cid-{len(options)}-{len(options['lams'])}", report=False,
        device="cpu", **options,
    )  # fmt: skip


def check_pair(name, table: pd.DataFrame, decoding, tiny_models):
    """Each row decoded again naively: forward is CID(x; x'), backward CID(x'; x)."""
    model = LOADERS[name].from_pretrained(tiny_models[name]).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_models[name])
    for row in table.to_dict("records"):
        x, contrast = PAIR if row["direction"] == "forward" else PAIR[::-1]
        assert (row["input"], row["contrast"]) == (x, contrast)
        expected = naive_continuation(model, tokenizer, x, contrast, row["lam"], decoding)
        assert row["continuation"].strip() == expected, row


@pytest.mark.parametrize("name", list(LOADERS))
def test_cid_pair_continuations_recomputed(name, tiny_models, tmp_path):
    """``biaslens cid`` (the cid method) on a causal and an encoder-decoder model: both
    directions at every λ, each continuation decoded again by the naive decoder."""
    result = run_pair(name, tiny_models, tmp_path)
    table = result["continuations"]
    cells = sorted(zip(table["lam"], table["direction"], strict=True))
    assert cells == sorted((lam, d) for lam in (0.0, 5.0, 50.0) for d in ("forward", "backward"))
    check_pair(name, table, result.settings["decoding"], tiny_models)
    one_way = run_pair(name, tiny_models, tmp_path, one_way=True)["continuations"]
    assert set(one_way["direction"]) == {"forward"} and len(one_way) == 3


def test_the_pair_check_fails_when_the_directions_are_swapped(tiny_models, tmp_path):
    result = run_pair("llama", tiny_models, tmp_path)
    table = result["continuations"]
    forward = table[table["direction"] == "forward"].set_index("lam")["continuation"]
    backward = table[table["direction"] == "backward"].set_index("lam")["continuation"]
    assert (forward != backward).any(), "the two directions decode alike: nothing to swap"
    other = {"forward": backward, "backward": forward}
    swapped = table.assign(  # each direction's continuation filed under the other
        continuation=[
            other[d][lam] for lam, d in zip(table["lam"], table["direction"], strict=True)
        ]
    )
    with pytest.raises(AssertionError):
        check_pair("llama", swapped, result.settings["decoding"], tiny_models)
