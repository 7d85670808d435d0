"""What an audit runs: each method's steps at the chosen size, as the method declares them.

A step is one method run (a method and the settings it is given). ``--size`` picks the steps
and their limits (each method's :class:`~biaslens.framework.hooks.AuditRole`), so that a user
never chooses a ``--limit`` per method. Which steps apply to a model is not decided here
either: each method's own checks decide it when the audit plans (a masked LM has no CID; a
method whose benchmark data is missing says how to get it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from biaslens.errors import BiaslensError
from biaslens.framework.hooks import AUDIT_SIZES

NOT_DECLARED = "not an audit step in this version (run it alone)"


@dataclass(frozen=True)
class Step:
    """One method run of an audit: ``method`` with ``settings`` (keywords of
    :func:`biaslens.run`), named ``name`` in the audit's folder and its card."""

    method: str
    settings: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    preset: str | None = None


def audit_steps(size: str, methods: list[str] | None = None) -> tuple[list[Step], dict[str, str]]:
    """The steps of ``size`` (narrowed to ``methods`` when given, each at ``size`` or, where
    a method has no run at that size, at the next larger) and the methods left out, with why."""
    from biaslens.framework.registry import methods as registered

    if size not in AUDIT_SIZES:
        raise BiaslensError(f"--size: {size!r} is not one of {', '.join(AUDIT_SIZES)}")
    known = registered()
    if methods:
        unknown = [m for m in methods if m not in known]
        if unknown:
            raise BiaslensError(
                f"--methods: unknown method(s) {', '.join(unknown)}; known: {', '.join(known)}"
            )
        for name in methods:
            role = known[name].audit
            why = NOT_DECLARED if role is None else role.skip
            if why:
                raise BiaslensError(f"--methods: {name} is not an audit step: it {why}")
    steps, left_out = [], {}
    for name, spec in known.items():
        role = spec.audit
        if methods and name not in methods:
            left_out[name] = "not among --methods"
            continue
        if role is None or role.skip:
            left_out[name] = role.skip if role is not None else NOT_DECLARED
            continue
        sizes = AUDIT_SIZES[AUDIT_SIZES.index(size) :] if methods else (size,)
        chosen = next((role.sizes[s] for s in sizes if s in role.sizes), None)
        if chosen is None:
            left_out[name] = role.left_out.get(size, f"no run at --size {size}")
            continue
        for step in chosen:
            label = f"{name}-{step.suffix}" if step.suffix else name
            steps.append(Step(name, dict(step.settings), label, step.preset))
    return steps, left_out
