"""``biaslens run METHOD`` is generated from each method's declared options and the backends'."""

from __future__ import annotations

import click
import pandas as pd
import pytest
from click.testing import CliRunner
from pydantic import Field

from biaslens.cli.backends import backend_declarations
from biaslens.cli.methods import method_command
from biaslens.framework import options as O
from biaslens.framework.registry import Headline, MethodOutput, MethodSpec, methods
from biaslens.framework.settings import MethodSettings
from biaslens.models.config import BackendConfig


class ToySettings(MethodSettings):
    size: int = Field(default=7, ge=1)
    rates: tuple[float, ...] = (0.5, 1.5)
    weights: dict[str, float] = {"a": 1.0, "b": 2.0}
    label: str = "plain"


SEEN: list = []


def _body(ctx, settings):
    SEEN.append(settings)
    return MethodOutput(metrics={"size": settings.size}, tables={"t": pd.DataFrame({"x": [1]})})


def _spec(**changes) -> MethodSpec:
    options = (
        O.Option("size", help="How many.", type=int, minimum=1),
        O.Option("rates", "--rate", help="Rates.", type=float, multiple=True),
        O.Option("weights.a", "--weight-a", help="Weight a.", type=float),
        O.Option("label", help="A label."),
        O.Option("label", "--fancy", help="Old spelling.", type=bool, sets="fancy", hidden=True),
    )
    values = dict(
        name="toy-method",
        title="A method registered only in this test",
        settings=ToySettings,
        body=_body,
        needs_model=False,
        options=options,
        headlines=(Headline("t", "Table"),),
        run_name=lambda s: "run",
    )
    return MethodSpec(**(values | changes))


def _invoke(spec, args, monkeypatch, tmp_path):
    from biaslens.framework import registry

    monkeypatch.setitem(registry._METHODS, spec.name, spec)
    monkeypatch.chdir(tmp_path)
    app = click.Group("app")
    app.add_command(method_command(spec))
    app.add_command(click.Command("other", callback=lambda: None))  # the method is a sub-command
    SEEN.clear()
    return CliRunner().invoke(app, [spec.name, *args], catch_exceptions=False)


def test_a_new_method_gets_its_command_from_its_options(monkeypatch, tmp_path):
    result = _invoke(
        _spec(), ["--size", "3", "--rate", "0.1", "0.2", "--weight-a", "4"], monkeypatch, tmp_path
    )
    assert result.exit_code == 0, result.output
    (settings,) = SEEN
    assert settings.size == 3 and settings.rates == (0.1, 0.2)
    assert settings.weights == {"a": 4.0}  # a dict keyword gets only what was given
    assert settings.label == "plain"


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
    assert "How many. Default: 7." in text
    assert "Rates. Default: 0.5 1.5." in text
    assert "Weight a. Default: 1." in text
    assert "--fancy" not in text  # hidden
    assert "--output" in text and "--preset" in text and "--data-dir" not in text


def test_bad_values_are_refused_where_they_are_parsed(monkeypatch, tmp_path):
    result = _invoke(_spec(), ["--rate", "0.1", "nan"], monkeypatch, tmp_path)
    assert result.exit_code == 2 and "'--rate': nan is not a finite number" in result.output
    result = _invoke(_spec(), ["--size", "0"], monkeypatch, tmp_path)
    assert result.exit_code == 2 and "'--size': 0 is not >= 1" in result.output


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
    """Each declared keyword is a settings field, a make_settings parameter or a field of a
    nested settings model (a typo would otherwise be refused only when a user gives it)."""
    import inspect

    fields = set(spec.settings.model_fields)
    nested = {
        name
        for field in spec.settings.model_fields.values()
        for name in getattr(field.annotation, "model_fields", {})
    }
    parameters = (
        set(inspect.signature(spec.make_settings).parameters) if spec.make_settings else set()
    )
    for option in spec.options:
        if option.display:
            continue
        head = option.keyword.partition(".")[0]
        assert head in fields | nested | parameters, (spec.name, option.keyword)


def test_backend_options_are_the_backends_declared_options():
    from biaslens.models.registry import declared_options

    names = {option.keyword for option in backend_declarations()}
    declared = {k for k, (option, _) in declared_options().items() if option.cli}
    assert names == declared | {"backend"} and "max_retries" in names
    defaults = {option.keyword: option.default for option in backend_declarations()}
    assert defaults["max_retries"] == BackendConfig().max_retries == 5
    assert defaults["batch_size"] == "auto" and defaults["base_url"] is None
