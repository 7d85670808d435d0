"""UnQover's and LEI's probe sets, as ``biaslens datasets export`` writes them."""

from __future__ import annotations

from biaslens.data import sources
from biaslens.data.exports import ExportableSet, one_table, register_sets
from biaslens.methods.qa.data import lei
from biaslens.methods.qa.data.unqover import DOMAINS, load_question_set

UNQOVER = "allenai/unqover @ 3e47969 word lists"
LEI = "allenai/ethical-interventions @ 6c499c6"


def _unqover(domain: str):
    def chunks(data_dir):
        root = sources.locate("unqover", data_dir) / "word_lists"
        yield from load_question_set(domain, root).iter_examples()

    return chunks


def _lei_interventions(domain: str):
    def build(data_dir):
        folder = sources.locate("lei", data_dir)
        return lei.load_interventions(folder / "interventions" / f"{domain}_interventions.json")

    return one_table(build)


def _lei_split(name: str):
    def build(data_dir):
        return lei.read_split(lei.split_path(name, sources.locate("lei", data_dir)))

    return one_table(build)


register_sets(
    *(
        ExportableSet(
            f"unqover-{domain}",
            f"every UnQover {domain} example, with its key (both subject orders, both questions)",
            UNQOVER,
            "Apache-2.0",
            "the slot templates × subject pairs × activities of UnQover's word lists",
            _unqover(domain),
        )
        for domain in DOMAINS
    ),
    *(
        ExportableSet(
            f"lei-interventions-{domain}",
            f"LEI's {domain} intervention sentences by type and category",
            LEI,
            "Apache-2.0",
            "the release's intervention file, one row per sentence",
            _lei_interventions(domain),
        )
        for domain in ("religion", "ethnicity", "gender")
    ),
    *(
        ExportableSet(
            f"lei-{split.replace('/', '-')}",
            f"the LEI split {split} (contexts, questions, interventions, stored zero-shot "
            "probabilities)",
            LEI,
            "Apache-2.0",
            "the release's SQuAD-format split, one row per paragraph and question pair",
            _lei_split(split),
        )
        for split in lei.SPLITS
    ),
)
