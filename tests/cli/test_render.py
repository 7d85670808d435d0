"""Warnings held back during progress bars are printed once each afterwards; resource notices
the garbage collector raises about earlier objects are not the command's and are left out."""

from __future__ import annotations

import warnings

from biaslens.cli import render


def test_each_distinct_warning_once_and_no_resource_warnings(monkeypatch):
    printed = []
    monkeypatch.setattr(render, "print_warning", printed.append)
    with render.collected_warnings():
        warnings.warn("target word not one token", UserWarning, stacklevel=1)
        warnings.warn("target word not one token", UserWarning, stacklevel=1)
        warnings.warn("unclosed event loop", ResourceWarning, stacklevel=1)
        warnings.warn("other", RuntimeWarning, stacklevel=1)
    assert printed == ["target word not one token", "other"]
