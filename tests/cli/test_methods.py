"""``biaslens run METHOD`` is generated from each method's settings (the fields with a flag) and
the backends' declared options."""

from __future__ import annotations

from typing import Annotated

import click
import pandas as pd
import pytest
from click.testing import CliRunner
from pydantic import BaseModel, Field

from biaslens.cli.backends import backend_declarations
from biaslens.cli.methods import method_command
from biaslens.common.options import FLAG, Flag
from biaslens.framework.registry import Headline, MethodOutput, MethodSpec, methods
from biaslens.framework.settings import MethodSettings
from biaslens.models.config import BackendConfig


class Weights(BaseModel):
    a: Annotated[float, Flag("--weight-a")] = Field(default=1.0, description="Weight a.")
    b: float = 2.0


class ToySettings(MethodSettings):
    size: Annotated[int, FLAG] = Field(default=7, ge=1, description="How many.")
    rates: Annotated[tuple[float, ...], Flag("--rate")] = Field(
        default=(0.5, 1.5), description="Rates."
    )
    weights: Annotated[Weights, Flag(nested="keys")] = Weights()
    label: Annotated[str, Flag(switch=("--fancy", "fancy"))] = Field(
        default="plain", description="A label."
    )
    note: str = "no flag: not an option"


SEEN: list = []


def _body(ctx, settings):
    SEEN.append(settings)
    return MethodOutput(metrics={"size": settings.size}, tables={"t": pd.DataFrame({"x": [1]})})


def _spec(**changes) -> MethodSpec:
    values = dict(
        name="toy-method",
        title="A method registered only in this test",
        settings=ToySettings,
        body=_body,
        needs_model=False,
        headlines=(Headline("t", "Table"),),
        run_name=lambda s: "run",
    )
    return MethodSpec(**(values | changes))


def _invoke(spec, args, monkeypatch, tmp_path):
    from biaslens.framework import registry

    monkeypatch.setitem(registry.METHODS._entries, spec.name, spec)
    monkeypatch.chdir(tmp_path)
    app = click.Group("app")
    app.add_command(method_command(spec))
    app.add_command(click.Command("other", callback=lambda: None))  # the method is a sub-command
    SEEN.clear()
    return CliRunner().invoke(app, [spec.name, *args], catch_exceptions=False)


def test_a_new_method_gets_its_command_from_its_settings(monkeypatch, tmp_path):
    result = _invoke(
        _spec(), ["--size", "3", "--rate", "0.1", "0.2", "--weight-a", "4"], monkeypatch, tmp_path
    )
    assert result.exit_code == 0, result.output
    (settings,) = SEEN
    assert settings.size == 3 and settings.rates == (0.1, 0.2)
    assert settings.weights == Weights(a=4.0, b=2.0)  # a nested key gets only what was given
    assert settings.label == "plain"
    assert [o.keyword for o in _spec().options] == ["size", "rates", "weights.a", "label", "label"]


def test_options_not_given_leave_the_settings_defaults(monkeypatch, tmp_path):
    result = _invoke(_spec(), [], monkeypatch, tmp_path)
    assert result.exit_code == 0, result.output
    assert SEEN == [ToySettings()]


def test_a_switch_sets_its_value_only_when_the_option_is_not_given(monkeypatch, tmp_path):
    _invoke(_spec(), ["--fancy", "-o", "a"], monkeypatch, tmp_path)
    assert SEEN[0].label == "fancy"
    _invoke(_spec(), ["--fancy", "--label", "mine", "-o", "b"], monkeypatch, tmp_path)
    assert SEEN[0].label == "mine"


def test_help_shows_defaults_read_from_the_settings(monkeypatch, tmp_path):
    result = _invoke(_spec(), ["--help"], monkeypatch, tmp_path)
    text = " ".join(result.output.split())
    assert "How many. [default: 7]" in text
    assert "Rates. [default: 0.5 1.5]" in text
    assert "Weight a. [default: 1]" in text
    assert "--fancy" not in text  # hidden
    assert "--output" in text and "--preset" in text and "--data-dir" not in text


def test_bad_values_are_refused_naming_the_flag(monkeypatch, tmp_path):
    """Text that is not a number is refused where it is read; a number out of the field's
    bounds by the settings model (checked once, there), each naming the flag."""
    from biaslens.errors import BiaslensError

    result = _invoke(_spec(), ["--rate", "0.1", "nan"], monkeypatch, tmp_path)
    assert result.exit_code == 2 and "'--rate': nan is not a finite number" in result.output
    with pytest.raises(BiaslensError, match=r"^--size: Input should be greater than or equal"):
        _invoke(_spec(), ["--size", "0"], monkeypatch, tmp_path)


def test_every_registered_method_has_exactly_its_declared_options():
    from biaslens import cli

    run = cli.app.commands["run"]
    backend = {flag for option in backend_declarations() for flag in option.flags}
    for name, spec in methods().items():
        declared = {flag for option in spec.options for flag in option.flags}
        declared = {part for flag in declared for part in flag.split("/")}
        runner = {"--output", "-o", "--preset"} | ({"--data-dir"} if spec.reads_data else set())
        compared = {"--models-file"} if spec.comparison else set()
        asks_model = (
            backend | {"--dry-run", "--price", "--cache-dir", "--no-cache"}
            if spec.needs_model
            else set()
        )
        expected = declared | runner | compared | asks_model
        given = {
            opt for p in run.get_command(None, name).params for opt in p.opts + p.secondary_opts
        }
        assert given == expected, name


@pytest.mark.parametrize("spec", list(methods().values()), ids=lambda s: s.name)
def test_every_option_fills_a_setting_of_its_method(spec):
    """Each option's keyword is a settings field or a field of a nested settings model, and
    its help is that field's description: a setting is declared once."""
    fields = spec.settings.model_fields
    nested = {
        name: inner
        for field in fields.values()
        for name, inner in getattr(field.annotation, "model_fields", {}).items()
    }
    for option in spec.options:
        if option.display or option.sets is not None:
            continue
        head, _, key = option.keyword.partition(".")
        field = nested[key] if key else fields.get(head) or nested[head]
        assert option.help in (field.description, *dict(_flag_helps(spec)).values()), option


def test_backend_options_are_the_backends_declared_options():
    from biaslens.models.registry import declared_options

    names = {option.keyword for option in backend_declarations()}
    declared = {k for k, (option, _) in declared_options().items() if option.rules.cli}
    assert names == declared | {"backend"} and "max_retries" in names
    defaults = {option.keyword: option.default for option in backend_declarations()}
    assert defaults["max_retries"] == declared_options()["max_retries"][0].default == 5
    assert BackendConfig(backend="openai").options.max_retries == 5
    assert defaults["batch_size"] == "auto" and defaults["base_url"] is None


def _flag_helps(spec):
    """The helps a nested field's flag words for one method (CID's λ grid for λ*)."""
    from biaslens.common.options import Flag

    for field in spec.settings.model_fields.values():
        for item in field.metadata:
            if isinstance(item, Flag):
                yield from item.helps


def test_a_flagged_field_without_help_is_refused():
    from biaslens.framework.options import options_of

    class NoHelp(MethodSettings):
        size: Annotated[int, FLAG] = 3

    with pytest.raises(TypeError, match="NoHelp.size has a Flag but no description"):
        options_of(NoHelp)
