"""Every column a method prints is explained: the walk below runs each method on a tiny model,
turns each headline table the terminal shows into what it prints, and asks for the meaning of
every printed column (a headline metric's comes with its measure, the others from the legend
under the table). The printed run itself shows the legend lines."""

from __future__ import annotations

import pytest

import biaslens
from biaslens.framework.legends import legend_lines, shown_table
from biaslens.framework.registry import get_method
from tests.conformance.test_cid import NAMES
from tests.conftest import DATA


def runs(tiny_models, unqover_data, tmp_path) -> dict:
    """One small run of every method whose tables the terminal shows."""
    common = {"report": False, "device": "cpu"}
    names = tmp_path / "names.yaml"
    names.write_text(NAMES)
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("The nurse said that she would be late because\n")
    llama = str(tiny_models["llama"])
    plans = {
        "sib-mgc": (llama, {"w_kinds": ("dates",), "limit": 1}),
        "sib-detect": (llama, {"limit": 1, "data_dir": DATA}),
        "sib-toy": (None, {"n": 1000}),
        "unqover": (str(tiny_models["roberta-qa"]),
                    {"domain": "religion", "data_dir": unqover_data}),
        "lei-eval": (llama, {"domain": "religion", "limit": 6, "data_dir": DATA}),
        "cid-audit": (llama, {"groups": ("tiny-a", "tiny-b"), "names_file": names,
                              "max_new_tokens": 3}),
        "cid-sensitivity": (llama, {"sentences_file": sentences, "variants": 1,
                                    "types": ("gender",), "max_new_tokens": 3}),
        "cid": (llama, {"x": "The doctor said that", "x_prime": "The nurse said that",
                        "max_new_tokens": 3}),
    }  # fmt: skip
    out = {}
    for method, (model, settings) in plans.items():
        options = {**common, **settings}
        if model is None:
            options.pop("device")
            out[method] = biaslens.run(method, output=tmp_path / method, **options)
        else:
            out[method] = biaslens.run(method, model, output=tmp_path / method, **options)
    return out


def unexplained(spec, result) -> list[str]:
    missing = []
    for headline in spec.headlines:
        if not headline.cli or headline.table not in result.tables:
            continue
        _, columns = shown_table(headline, result.tables[headline.table])
        assert columns, (spec.name, headline.table)
        missing += [
            f"{spec.name} / {headline.table}: {column}"
            for column, meaning in legend_lines(spec, headline, columns)
            if not meaning
        ]
    return missing


def test_every_printed_column_of_every_method_is_explained(tiny_models, unqover_data, tmp_path):
    results = runs(tiny_models, unqover_data, tmp_path)
    missing = []
    for method, result in results.items():
        missing += unexplained(get_method(method), result)
    assert not missing, "\n".join(missing)


def test_headlines_with_fixed_columns_are_explained():
    """Tables whose columns are declared (lei-train's, sib-mgc's comparison across models):
    checked without a run."""
    from biaslens.framework.registry import built_in_methods

    missing = []
    for spec in built_in_methods().values():
        headlines = list(spec.headlines)
        if spec.comparison is not None:
            headlines.append(spec.comparison.headline)
        for headline in headlines:
            if headline.cli and headline.columns and headline.view is None:
                missing += [
                    f"{spec.name} / {headline.table}: {column}"
                    for column, meaning in legend_lines(spec, headline, headline.columns)
                    if not meaning
                ]
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("column", ["sentences", "ρ(W)", "r²"])
def test_the_printed_run_shows_the_legend(column, tiny_models, tmp_path, monkeypatch, capsys):
    from tests.test_cli import run_cli

    code, out, err = run_cli(
        monkeypatch, capsys, "run", "sib-mgc", "--model", str(tiny_models["llama"]), "--w",
        "dates", "--limit", "1", "--device", "cpu", "--output", str(tmp_path / "run"),
    )  # fmt: skip
    assert code == 0, err
    assert any(line.startswith(f"  {column}: ") for line in out.splitlines()), out


def declared_twice(specs) -> list[str]:
    """Columns whose meaning a headline's legend declares beside another declaration of it: its
    table's output file, the columns every method shares, or the run files' glossary (a
    meaning is declared once, where the file is declared; the legend only adds what no other
    declaration has)."""
    from biaslens.framework.legends import COMMON
    from biaslens.store.output_files import GLOSSARY

    found = []
    for spec in specs:
        for headline in spec.headlines:
            stored = next(
                (o for o in spec.outputs if o.name.rsplit(".", 1)[0] == headline.table), None
            )
            elsewhere = {*COMMON, *GLOSSARY, *(stored.meanings if stored else {})}
            found += [
                f"{spec.name} {headline.table}: {column}"
                for column in (headline.legend or {})
                if column in elsewhere
            ]
    return found


def measures_declared_again(specs, glossary) -> list[str]:
    """Headline metrics whose column meaning is declared a second time: by the file of their
    table or by the glossary of shared names (a measure's meaning is its Measure's)."""
    found = []
    for spec in specs:
        for headline in spec.headlines:
            stored = [o for o in spec.outputs if o.name.rsplit(".", 1)[0] == headline.table]
            for measure in headline.measures:
                if measure.column in glossary:
                    found.append(f"glossary: {measure.column}")
                found += [
                    f"{spec.name} {o.name}: {measure.column}"
                    for o in stored
                    if measure.column in o.meanings
                ]
    return sorted(set(found))


def test_a_columns_meaning_is_declared_once():
    from biaslens.framework.legends import COMMON
    from biaslens.framework.registry import built_in_methods
    from biaslens.store.output_files import GLOSSARY

    specs = built_in_methods().values()
    assert declared_twice(specs) == []
    assert measures_declared_again(specs, GLOSSARY) == []
    assert set(COMMON) & set(GLOSSARY) == set()  # the printed columns' and the files' glossary


def test_a_measures_meaning_comes_from_the_measure():
    """The results reference and the run checks read a headline metric's meaning from its
    Measure: a file that declared it again would be found, and the measure's text is the one
    shown."""
    from dataclasses import replace

    from biaslens.framework.registry import built_in_methods
    from biaslens.store.output_files import GLOSSARY

    spec = built_in_methods()["sib-detect"]
    rates = next(o for o in spec.outputs if o.name == "rates.csv")
    tpr = next(m for h in spec.headlines for m in h.measures if m.column == "tpr")
    assert spec.meaning(rates, "tpr").startswith(f"{tpr.symbol}: {tpr.definition}")
    again = replace(rates, meanings={**rates.meanings, "tpr": "flagged share"})
    doubled = replace(spec, outputs=tuple(again if o is rates else o for o in spec.outputs))
    assert measures_declared_again([doubled], GLOSSARY) == ["sib-detect rates.csv: tpr"]
    assert measures_declared_again([spec], {**GLOSSARY, "tpr": "x"}) == ["glossary: tpr"]


def test_the_check_finds_a_meaning_declared_twice():
    from dataclasses import replace

    from biaslens.framework.registry import built_in_methods

    spec = built_in_methods()["sib-mgc"]
    fits = next(h for h in spec.headlines if h.table == "fits")
    twice = replace(fits, legend={**(fits.legend or {}), "n": "W values on the line"})
    doubled = replace(spec, headlines=tuple(twice if h is fits else h for h in spec.headlines))
    assert declared_twice([doubled]) == ["sib-mgc fits: n"]
