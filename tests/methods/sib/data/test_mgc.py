import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.sib.data import mgc
from biaslens.methods.sib.data.pronouns import gender_of, target_words


def test_mgc_has_3000_sentences_with_unique_ids():
    table = mgc.build_mgc()
    assert len(table) == 3000
    assert table["id"].is_unique
    assert table.groupby("w_kind").size().to_dict() == {"dates": 1800, "places": 1200}
    assert table.groupby(["w_kind", "w_index"]).size().eq(60).all()


def test_mgc_sentence_text():
    table = mgc.build_mgc(("places",))
    row = table[(table.w == "Mali") & (table.verb == "will be") & (table.life_stage == "an adult")]
    assert row["sentence"].item() == "In Mali, [MASK] will be an adult."
    assert mgc.build_mgc(("dates",))["sentence"][0] == "In 1801, [MASK] was a child."


def test_date_grids():
    code = mgc.dates("code")
    assert len(code) == 30 and code[0] == "1801" and code[-1] == "2016"
    assert code[1] == "1808"  # 1801 + 215/29 = 1808.41
    # the reference code cuts to whole years: 1801 + 2·215/29 = 1815.83 -> 1815 (rounded: 1816)
    assert code[2] == "1815" and mgc.dates("rounded")[2] == "1816"
    import numpy as np

    reference = np.linspace(1801, 2016, 30).astype(int)
    assert code == tuple(str(y) for y in reference)
    assert sum(a != b for a, b in zip(code, mgc.dates("rounded"), strict=True)) == 14
    text = mgc.dates("text")
    assert text[0] == "1801" and text[-1] == "2001"
    with pytest.raises(BiaslensError, match="unknown date grid"):
        mgc.dates("other")


def test_places_are_the_20_wef_countries_in_order():
    assert len(mgc.PLACES) == 20
    assert mgc.PLACES[0] == "Afghanistan" and mgc.PLACES[-1] == "Iceland"


def test_prompts_are_verbatim_appendix_d2():
    sentence = "In 1953, [MASK] was a teenager."
    assert mgc.wrap_in_prompt(sentence, "A") == (
        "Instructions: Please carefully read the following passage and fill-in the gendered "
        "pronoun indicated by a <mask>.\nPassage: In 1953, <mask> was a teenager.\nAnswer:"
    )
    assert mgc.wrap_in_prompt(sentence, "B") == (
        "The gendered pronoun missing in this sentence: 'In 1953, _ was a teenager.', is"
    )
    assert mgc.wrap_in_prompt(sentence, "C") == (
        "In this sentence: 'In 1953, _ was a teenager.', the missing gendered pronoun is"
    )
    with pytest.raises(BiaslensError, match="unknown prompt"):
        mgc.wrap_in_prompt(sentence, "D")


def test_limit_keeps_every_w_value_and_is_seeded():
    table = mgc.build_mgc()
    small = mgc.limit_per_w(table, 2, seed=1)
    assert len(small) == 100
    assert small.groupby(["w_kind", "w_index"]).size().eq(2).all()
    assert small.equals(mgc.limit_per_w(table, 2, seed=1))
    assert not small.equals(mgc.limit_per_w(table, 2, seed=2))
    with pytest.raises(BiaslensError, match="--limit must be >= 1"):
        mgc.limit_per_w(table, 0, seed=0)


def test_pronoun_lists_and_targets():
    assert (
        gender_of(" She") == "female"
        and gender_of("HIS") == "male"
        and gender_of("they") == "neutral"
    )
    assert gender_of(" the") is None
    targets = target_words(fills_slot=False)
    assert len(targets) == 32 and ("female", " she") in targets and ("neutral", " They") in targets
    assert ("female", "She") in targets  # a reply after a chat header begins without a space
    assert ("male", "Male") in target_words(fills_slot=True)
    assert len(target_words(fills_slot=True)) == 16
