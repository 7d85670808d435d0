"""The package version and the commit it was built from (a leaf module, so that any layer can
name it).

``_version.py`` is written by setuptools-scm when the package is built or installed (the version
is derived from git: ``0.1.devN+g<commit>``, with ``.dYYYYMMDD`` where the tree was modified).
"""

from __future__ import annotations

try:
    from biaslens._version import __commit__, __dirty__, __version__
except ImportError:  # a source tree that was never built or installed
    __version__ = "0+unknown"
    __commit__ = None
    __dirty__ = None

BUILT_COMMIT: str | None = __commit__[1:] if (__commit__ or "").startswith("g") else __commit__
"""The full commit the package was built from (setuptools-scm's node without its ``g``)."""
BUILT_DIRTY: bool | None = __dirty__
"""Whether the source tree it was built from had uncommitted changes."""
