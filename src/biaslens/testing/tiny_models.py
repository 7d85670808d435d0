"""Tiny random models of every kind, built from a config with a tokenizer trained on the spot.

Used by the test suite and the benchmarks: each builder trains a tokenizer with the
``tokenizers`` library on MGC-style text, builds a model from a config, and saves both to a
folder that loads through the normal ``load_model(path)`` path. Nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import (
    AddedToken,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    BertConfig,
    BertForMaskedLM,
    BertForQuestionAnswering,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    RobertaConfig,
    RobertaForMaskedLM,
    RobertaForQuestionAnswering,
    T5Config,
    T5ForConditionalGeneration,
)

from biaslens.methods.sib.data import mgc
from biaslens.methods.sib.data.pronouns import GENDER_WORDS


def corpus() -> list[str]:
    """Text the tiny tokenizers are trained on: MGC sentences, prompts, pronouns, QA text."""
    table = mgc.build_mgc()
    lines = list(table["sentence"].str.replace(mgc.MASK, "they"))
    lines += [mgc.wrap_in_prompt(s, p) for s in table["sentence"][:40] for p in mgc.PROMPTS]
    words = [w for ws in GENDER_WORDS.values() for w in ws]
    lines += [f"Answer: {w}. {w} is here, {w} said." for w in words] * 20
    lines += [
        "Who was late? The doctor and the nurse met. Note that, people are equal.",
        "Alice and Bob went to the market. Bob bought apples.",
    ] * 20
    return lines


def _bpe(special: list[str], byte_level: bool = True) -> Tokenizer:
    tokenizer = Tokenizer(models.BPE(unk_token=None if byte_level else "<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(), trainer)
    return tokenizer


def _save(folder: Path, model_class, config, tokenizer: PreTrainedTokenizerFast) -> Path:
    """Build ``model_class(config)`` with seeded weights and save it with its tokenizer."""
    torch.manual_seed(0)
    model_class(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_bert_mlm(folder: Path) -> Path:
    return _build_bert(folder, BertForMaskedLM)


def build_bert_qa(folder: Path) -> Path:
    """An uncased BERT extractive-QA model (WordPiece: UnQover's BERT span rule)."""
    return _build_bert(folder, BertForQuestionAnswering)


def _build_bert(folder: Path, model_class) -> Path:
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    tokenizer.train_from_iterator(
        corpus(),
        trainers.WordPieceTrainer(vocab_size=400, special_tokens=special, show_progress=False),
    )
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    config = BertConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    return _save(folder, model_class, config, fast)


def _roberta_bpe(mask_takes_space: bool = False):
    """A BPE tokenizer with RoBERTa's special tokens and ``<s> … </s>`` post-processing;
    ``mask_takes_space``: ``<mask>`` absorbs the space before it (facebook/bart-*)."""
    tokenizer = _bpe(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    if mask_takes_space:
        tokenizer.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True)])
    tokenizer.post_processor = processors.RobertaProcessing(
        ("</s>", tokenizer.token_to_id("</s>")),
        ("<s>", tokenizer.token_to_id("<s>")),
        add_prefix_space=False,
        trim_offsets=True,
    )
    return tokenizer


def build_roberta_qa(folder: Path) -> Path:
    return _build_roberta(folder, RobertaForQuestionAnswering)


def build_roberta_mlm(folder: Path) -> Path:
    """A RoBERTa-style masked LM (``<mask>`` absorbs the space before it, as roberta-base's)."""
    return _build_roberta(folder, RobertaForMaskedLM, mask_takes_space=True)


def _roberta_tokenizers(mask_takes_space: bool, **special: str):
    """The byte-level BPE of RoBERTa and BART, raw and as a transformers tokenizer with their
    special tokens (``special``: more of them, e.g. RoBERTa's ``sep_token``)."""
    tokenizer = _roberta_bpe(mask_takes_space)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
        **special,
    )
    return tokenizer, fast


def _build_roberta(folder: Path, model_class, mask_takes_space: bool = False) -> Path:
    tokenizer, fast = _roberta_tokenizers(mask_takes_space, sep_token="</s>", cls_token="<s>")
    config = RobertaConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=160,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    return _save(folder, model_class, config, fast)


def build_bart(folder: Path) -> Path:
    """A BART-style denoiser (``BartForConditionalGeneration`` with a ``<mask>`` token)."""
    tokenizer, fast = _roberta_tokenizers(mask_takes_space=True)
    config = BartConfig(
        vocab_size=tokenizer.get_vocab_size(),
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=160,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_eos_token_id=2,
    )
    torch.manual_seed(0)
    model = BartForConditionalGeneration(config)
    with torch.no_grad():  # a non-zero bias, so that tests see it applied
        model.final_logits_bias.normal_(0, 0.5)
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def build_t5(folder: Path, sentinels: int = 0) -> Path:
    special = ["<pad>", "</s>", "<unk>", *(f"<extra_id_{i}>" for i in range(sentinels))]
    tokenizer = _bpe(special)
    eos = tokenizer.token_to_id("</s>")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", eos)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        additional_special_tokens=special[3:] or None,
    )
    config = T5Config(
        vocab_size=tokenizer.get_vocab_size(),
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=2,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    return _save(folder, T5ForConditionalGeneration, config, fast)


CHAT_TEMPLATE = (
    "{% for m in messages %}<s>{{ m['role'] }}\n{{ m['content'] }}</s>\n{% endfor %}"
    "{% if add_generation_prompt %}<s>assistant\n{% endif %}"
)
"""A ChatML-like template for the tiny Llama (chat formatting is tested on it)."""


def build_llama(folder: Path) -> Path:
    special = ["<s>", "</s>", "<unk>"]
    tokenizer = _bpe(special)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    fast.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=256,
        bos_token_id=0,
        eos_token_id=1,
        tie_word_embeddings=False,
    )
    return _save(folder, LlamaForCausalLM, config, fast)


def build_gpt2(folder: Path) -> Path:
    tokenizer = _bpe(["<|endoftext|>"])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<|endoftext|>", eos_token="<|endoftext|>"
    )
    config = GPT2Config(
        vocab_size=tokenizer.get_vocab_size(),
        n_embd=32,
        n_layer=2,
        n_head=2,
        n_positions=256,
        bos_token_id=0,
        eos_token_id=0,
    )
    return _save(folder, GPT2LMHeadModel, config, fast)


def build_t5_denoiser(folder: Path) -> Path:
    """A T5/UL2-style span denoiser: the T5 recipe with ``<extra_id_N>`` sentinels."""
    return build_t5(folder, sentinels=3)


BUILDERS = {
    "bert-mlm": build_bert_mlm,
    "roberta-qa": build_roberta_qa,
    "roberta-mlm": build_roberta_mlm,
    "t5": build_t5,
    "t5-denoiser": build_t5_denoiser,
    "bart": build_bart,
    "llama": build_llama,
    "gpt2": build_gpt2,
}


def build(name: str, folder: Path) -> Path:
    """Build the tiny model ``name`` (one of ``BUILDERS``) into ``folder``."""
    return BUILDERS[name](Path(folder))
