"""Shorthands for running a method in tests (through the one runner, without the report)."""

from __future__ import annotations

from biaslens.runner import run_method


def runner(method: str):
    """``run(settings, output, backend=None, progress=None, **options)`` for ``method``."""

    def run(settings, output, backend=None, progress=None, **options):
        options.setdefault("report", False)
        return run_method(
            method, settings, output=output, backend=backend, progress=progress, **options
        )

    run.__name__ = f"run_{method.replace('-', '_')}"
    return run


run_mgc = runner("sib-mgc")
run_detect = runner("sib-detect")
run_toy = runner("sib-toy")
run_lei_eval = runner("lei-eval")
run_lei_train = runner("lei-train")
run_audit = runner("cid-audit")
run_sensitivity = runner("cid-sensitivity")


def import_ray():
    """Ray, or a skip where it is not installed (a failure where ``BIASLENS_REQUIRE_RAY=1``)."""
    import os

    import pytest

    if os.environ.get("BIASLENS_REQUIRE_RAY") == "1":
        return __import__("ray")
    return pytest.importorskip("ray")


def shared_cache_file():
    """The one file of the test's shared request cache (``BIASLENS_REQUEST_CACHE_DIR``, set per
    test by ``conftest.private_request_cache``): the runs of one model write there."""
    import os
    from pathlib import Path

    files = sorted(Path(os.environ["BIASLENS_REQUEST_CACHE_DIR"]).glob("*.sqlite"))
    assert len(files) == 1, f"expected one model's request cache, found {files}"
    return files[0]


def few_attribute_lists(source, target, keep: int = 2):
    """A copy of the UnQover lists under ``source`` (a data folder) in ``target`` whose activity
    lists keep their first ``keep`` attributes of every kind (the kinds' lines stay aligned):
    the smallest complete design ``--limit`` draws (3 subjects × 2 templates × every attribute)
    is then a few dozen examples, not hundreds."""
    import re
    import shutil
    from pathlib import Path

    shutil.copytree(Path(source) / "unqover", Path(target) / "unqover")
    for path in (Path(target) / "unqover" / "word_lists" / "activities").iterdir():
        seen: dict[str, int] = {}
        lines = []
        for line in path.read_text(encoding="utf-8").splitlines():
            head = re.match(r"^(\[[^\]]+\])", line)
            if head:
                seen[head.group(1)] = seen.get(head.group(1), 0) + 1
                if seen[head.group(1)] > keep:
                    continue
            lines.append(line)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Path(target)


def message_lines(err: str) -> list[str]:
    """The non-blank lines of a command's stderr less its progress lines (a piped run prints
    ``… 0:00:05 elapsed[, eta …]`` every few seconds, however long it takes to fail,
    ``run folder: …`` once it knows where its results go, and ``--limit N: … → …``, what the
    limit kept, before the work starts)."""
    import re

    progress = re.compile(
        r"^(.+: .*\d+:\d\d:\d\d elapsed(, eta \S+)?|run folder: .+|--limit \d+: .+ → .+)$"
    )
    return [line for line in err.strip().splitlines() if line.strip() and not progress.match(line)]


def assert_refused(loader, path, *cases: tuple[str, str]) -> None:
    """Each case's text written to ``path`` and read by ``loader``: a one-line error matching
    the case's pattern (a regular expression), for the readers of user files."""
    import pytest

    from biaslens.errors import BiaslensError

    for text, match in cases:
        path.write_text(text)
        with pytest.raises(BiaslensError, match=match):
            loader(path)
