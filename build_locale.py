"""The message catalogues compiled as part of the build: each ``locale/<lang>/LC_MESSAGES/
*.po`` becomes the ``.mo`` beside it, which Django reads (the ``.mo`` files are not
committed).

Pure Python, so neither a wheel build nor a development venv needs GNU gettext's
``msgfmt``: ``read_po`` reads a catalogue (also for the guard test,
tests/test_catalogue.py), ``write_mo`` writes GNU's binary format as ``msgfmt`` does
(untranslated and fuzzy entries left out). Used by

- the wheel build: ``[tool.setuptools.cmdclass]`` in pyproject.toml runs ``BuildPy``,
  which compiles every catalogue it copies into the build directory;
- the development venv: scripts/lib.sh runs ``python build_locale.py`` (every catalogue
  of the source tree, only those whose ``.mo`` is missing or older).
"""

from __future__ import annotations

import ast
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

try:
    from setuptools.command.build_py import build_py
except ImportError:  # a venv without setuptools compiles (main) but builds nothing
    build_py = object

ROOT = Path(__file__).resolve().parent
# Where a checkout's catalogues are: the project's (locale/, shipped as config/locale)
# and each app's.
SKIP_DIRS = {".venv", "var", "build", "node_modules", ".git"}


@dataclass
class Entry:
    msgid: str
    msgstr: list[str] = field(default_factory=list)
    msgctxt: str | None = None
    msgid_plural: str | None = None
    flags: set[str] = field(default_factory=set)

    @property
    def fuzzy(self) -> bool:
        return "fuzzy" in self.flags

    @property
    def translated(self) -> bool:
        return bool(self.msgstr) and all(self.msgstr)

    @property
    def key(self) -> tuple[str | None, str]:
        return (self.msgctxt, self.msgid)


def _unquote(text: str, path: Path, number: int) -> str:
    text = text.strip()
    if not (len(text) >= 2 and text[0] == text[-1] == '"'):
        raise ValueError(f"{path}:{number}: expected a quoted string, got {text!r}")
    # PO strings use C escapes, which a Python string literal reads the same way.
    return ast.literal_eval(text)


def read_po(path: Path) -> list[Entry]:
    """The entries of a .po file, the header (msgid "") first; obsolete ones (#~) left out."""
    entries: list[Entry] = []
    flags: set[str] = set()
    current: Entry | None = None
    # The field the next continuation line ("...") extends: (name, index).
    target: tuple[str, int] | None = None

    def finish() -> None:
        nonlocal current
        if current is not None:
            entries.append(current)
        current = None

    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#~"):
            continue
        if line.startswith("#"):
            if current is not None and current.msgstr:
                finish()
            if line.startswith("#,"):
                flags |= {flag.strip() for flag in line[2:].split(",") if flag.strip()}
            continue
        keyword, _, rest = line.partition(" ")
        if line.startswith('"'):
            if current is None or target is None:
                raise ValueError(f"{path}:{number}: continuation outside an entry")
            value = _unquote(line, path, number)
            name, index = target
            if name == "msgstr":
                current.msgstr[index] += value
            else:
                setattr(current, name, (getattr(current, name) or "") + value)
            continue
        value = _unquote(rest, path, number)
        if keyword == "msgctxt" or (keyword == "msgid" and (current is None or current.msgstr)):
            finish()
            current = Entry(msgid="", flags=flags)
            flags = set()
        if current is None:
            raise ValueError(f"{path}:{number}: {keyword} outside an entry")
        if keyword in ("msgctxt", "msgid", "msgid_plural"):
            setattr(current, keyword, value)
            target = (keyword, 0)
        elif keyword == "msgstr":
            current.msgstr = [value]
            target = ("msgstr", 0)
        elif keyword.startswith("msgstr[") and keyword.endswith("]"):
            index = int(keyword[7:-1])
            current.msgstr.extend([""] * (index + 1 - len(current.msgstr)))
            current.msgstr[index] = value
            target = ("msgstr", index)
        else:
            raise ValueError(f"{path}:{number}: unknown keyword {keyword!r}")
    finish()
    return entries


def write_mo(entries: list[Entry], path: Path) -> None:
    """GNU's .mo format (as CPython's Tools/i18n/msgfmt.py writes it): the header and every
    translated, non-fuzzy entry, sorted by original."""
    messages: dict[bytes, bytes] = {}
    for entry in entries:
        header = entry.msgid == "" and entry.msgctxt is None
        if not header and (entry.fuzzy or not entry.translated):
            continue
        original = entry.msgid
        if entry.msgid_plural is not None:
            original += "\0" + entry.msgid_plural
        if entry.msgctxt is not None:
            original = entry.msgctxt + "\x04" + original
        messages[original.encode()] = "\0".join(entry.msgstr).encode()
    keys = sorted(messages)
    ids = strs = b""
    offsets: list[tuple[int, int, int, int]] = []
    for key in keys:
        offsets.append((len(ids), len(key), len(strs), len(messages[key])))
        ids += key + b"\0"
        strs += messages[key] + b"\0"
    keystart = 7 * 4 + 16 * len(keys)
    valuestart = keystart + len(ids)
    koffsets: list[int] = []
    voffsets: list[int] = []
    for o1, l1, o2, l2 in offsets:
        koffsets += [l1, o1 + keystart]
        voffsets += [l2, o2 + valuestart]
    output = struct.pack(
        "Iiiiiii",
        0x950412DE,  # magic
        0,  # version
        len(keys),
        7 * 4,  # start of the originals' table
        7 * 4 + len(keys) * 8,  # start of the translations' table
        0,  # size of the hash table (none)
        0,  # its offset
    )
    output += struct.pack(f"{len(koffsets)}i", *koffsets)
    output += struct.pack(f"{len(voffsets)}i", *voffsets)
    output += ids + strs
    path.write_bytes(output)


def compile_po(po: Path, *, force: bool = True) -> bool:
    """Writes the .mo beside ``po``; without ``force`` only when it is missing or older."""
    mo = po.with_suffix(".mo")
    if not force and mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime:
        return False
    write_mo(read_po(po), mo)
    return True


def catalogues(root: Path = ROOT) -> list[Path]:
    """Every .po of the tree under ``root``, each once (config/locale is a link to locale/)."""
    found: list[Path] = []
    for path in sorted(root.rglob("locale/*/LC_MESSAGES/*.po")):
        relative = path.relative_to(root)
        # Each once, by its own path (config/locale is a link to locale/).
        if SKIP_DIRS & set(relative.parts) or path.resolve() != path.absolute():
            continue
        found.append(path)
    return found


class BuildPy(build_py):
    """setuptools' build_py, which also compiles the catalogues it copied."""

    def run(self) -> None:
        super().run()
        for po in Path(self.build_lib).rglob("locale/*/LC_MESSAGES/*.po"):
            compile_po(po)


def main(argv: list[str]) -> int:
    force = "--force" in argv
    for po in catalogues():
        if compile_po(po, force=force):
            print(f"compiled {po.relative_to(ROOT).with_suffix('.mo')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
