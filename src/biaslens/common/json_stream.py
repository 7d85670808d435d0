"""The members of a JSON file's top-level object, parsed one at a time.

UnQover's prediction dumps are one ``{key: prediction}`` object of up to ~1 GiB; ``json.load``
would hold it as Python objects (several times its size). :func:`iter_object_members` reads the
file in blocks and decodes each member with the standard library's decoder, so memory holds one
block and one member; errors name the file and line, like :func:`~.files.read_text`'s.
"""

from __future__ import annotations

import codecs
import json
import re
from array import array
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from biaslens.common.files import check_input_file
from biaslens.errors import BiaslensError

BLOCK_BYTES = 1 << 20
MAX_MEMBER_CHARS = 64 << 20
"""The largest single member (key and value) read: a bound on memory for a file that is one
giant value or is broken in a way only its end reveals."""
_SPACE = re.compile(r"[ \t\n\r]*")
_NUMBER_TAIL = re.compile(r"[0-9+\-.eE]*\Z")


class _Buffer:
    """Decoded text of the file from the current member on, with the line it starts at."""

    def __init__(self, handle, path: Path, what: str) -> None:
        self.handle, self.path, self.what = handle, path, what
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.text, self.pos, self.line, self.eof = "", 0, 1, False

    def more(self) -> bool:
        """Read one more block; False at the end of the file."""
        if self.eof:
            return False
        raw = self.handle.read(BLOCK_BYTES)
        self.eof = not raw
        try:
            self.text += self.decoder.decode(raw, final=self.eof)
        except UnicodeDecodeError as error:
            line = self.line + self.text.count("\n", 0) + raw[: error.start].count(b"\n")
            raise BiaslensError(
                f"{self.path}:{line}: not UTF-8 text; the {self.what} must be a JSON text file"
            ) from None
        return True

    def drop_consumed(self) -> None:
        """Forget the text before ``pos`` (counting its lines)."""
        if self.pos > BLOCK_BYTES:
            self.line += self.text.count("\n", 0, self.pos)
            self.text, self.pos = self.text[self.pos :], 0

    def line_at(self, pos: int) -> int:
        return self.line + self.text.count("\n", 0, pos)

    def skip_space(self) -> str:
        """The next non-space character ('' at the end of the file)."""
        while True:
            self.pos = _SPACE.match(self.text, self.pos).end()
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""

    def fail(self, message: str, pos: int | None = None) -> BiaslensError:
        line = self.line_at(self.pos if pos is None else pos)
        return BiaslensError(f"{self.path}:{line}: not valid JSON for the {self.what} ({message})")

    def value(self, decoder: json.JSONDecoder):
        """Decode the value at ``pos``, reading more text while it may be cut by a block end."""
        while True:
            try:
                value, end = decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as error:
                if self.eof or len(self.text) - self.pos > MAX_MEMBER_CHARS or not self.more():
                    raise self.fail(error.msg, error.pos) from None
                continue
            except RecursionError:
                raise self.fail("nested too deeply") from None
            if not self.eof and _NUMBER_TAIL.match(self.text, end) and self.more():
                continue  # the block ended in (or right after) a number that may go on
            self.pos = end
            return value


def iter_object_members(path: Path | str, what: str) -> Iterator[tuple[str, object]]:
    """``(key, value)`` of the top-level JSON object in ``path``, in file order.

    Anything else at the top level (an array, a number, text after the object) is an error
    naming the line, and a key given twice (``json.load`` would keep the last silently) is one
    naming the key, raised once the last member is read; the file passes
    :func:`check_input_file` first."""
    path = check_input_file(path, what)
    hashes = array("q")  # 8 bytes a key, checked for repeats at the end
    for key, value in _members(path, what):
        hashes.append(hash(key))
        yield key, value
    _refuse_repeated_keys(path, what, hashes)


def _members(path: Path, what: str) -> Iterator[tuple[str, object]]:
    decoder = json.JSONDecoder()
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed in the finally below
    except OSError as error:
        raise BiaslensError(f"cannot read {what} {path}: {error.strerror or error}") from None
    try:
        buffer = _Buffer(handle, path, what)
        if buffer.skip_space() != "{":
            raise buffer.fail("expected an object {key: …} at the top level")
        buffer.pos += 1
        first = True
        while True:
            char = buffer.skip_space()
            if char == "}":
                buffer.pos += 1
                break
            if not first:
                if char != ",":
                    raise buffer.fail("expected ',' or '}' after a member")
                buffer.pos += 1
                char = buffer.skip_space()
            if char != '"':
                raise buffer.fail("expected a quoted key")
            key = buffer.value(decoder)
            if buffer.skip_space() != ":":
                raise buffer.fail("expected ':' after a key")
            buffer.pos += 1
            buffer.skip_space()
            value = buffer.value(decoder)
            first = False
            yield key, value
            buffer.drop_consumed()
        if buffer.skip_space():
            raise buffer.fail("extra data after the top-level object")
    finally:
        handle.close()


def _refuse_repeated_keys(path: Path, what: str, hashes: array) -> None:
    """The first key given twice, named; a hash shared by two different keys (rare) costs one
    more read of the keys and is no error."""
    values, counts = np.unique(np.frombuffer(hashes, dtype=np.int64), return_counts=True)
    suspects = set(values[counts > 1].tolist())
    if not suspects:
        return
    seen: set[str] = set()
    for key, _ in _members(path, what):
        if hash(key) in suspects:
            if key in seen:
                raise BiaslensError(f"{path}: the {what} gives the key {key!r} more than once")
            seen.add(key)
