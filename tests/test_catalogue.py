"""The Russian catalogues are complete: every string marked for translation in the code
is in its catalogue, translated, and not fuzzy.

Each catalogue covers its own part of the tree: an app with a ``locale/`` of its own
(``pricefeed/locale/ru/LC_MESSAGES/django.po``) its own directory; the project's
catalogue (``locale/``, shipped as ``config/locale``) config, core, access, fleet,
monitoring, devkit and the top-level templates. The strings are extracted as
``makemessages`` extracts them, run on a copy of that part of the tree in a temporary
directory (it writes where it runs, and has no dry run), and compared with the committed
``.po``.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest
from django.core.management import call_command

from build_locale import Entry, read_po
from tests.requirements import require_gettext

ROOT = Path(__file__).resolve().parent.parent
LANGUAGE = "ru"
PO = Path("locale") / LANGUAGE / "LC_MESSAGES" / "django.po"
# The parts of the tree whose strings are in the project's catalogue (locale/).
PROJECT_SOURCES = ("config", "core", "access", "fleet", "monitoring", "devkit", "templates")
# config/locale is the project's (a link to locale/).
APPS_WITH_CATALOGUES = sorted(
    path.parent.name for path in ROOT.glob("*/locale") if path.parent.name != "config"
)
CATALOGUES = {"project": (Path("."), PROJECT_SOURCES)} | {
    app: (Path(app), (app,)) for app in APPS_WITH_CATALOGUES
}


def first_party_packages() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config["tool"]["ruff"]["lint"]["isort"]["known-first-party"]


def extracted(sources: tuple[str, ...], workdir: Path, monkeypatch) -> list[Entry]:
    """The entries makemessages makes from ``sources`` (relative to the repository)."""
    for source in sources:
        shutil.copytree(
            ROOT / source,
            workdir / source,
            symlinks=True,  # config/templates and config/locale stay links, not followed
            ignore=shutil.ignore_patterns("locale", "__pycache__", "static", "*.mo"),
        )
    # makemessages writes into ./locale; without one it would pick LOCALE_PATHS[0], the
    # repository's own catalogue.
    (workdir / "locale").mkdir()
    monkeypatch.chdir(workdir)
    call_command("makemessages", locale=[LANGUAGE], no_location=True, verbosity=0)
    po = workdir / PO
    return read_po(po) if po.exists() else []


def nplurals(header: Entry) -> int:
    for line in header.msgstr[0].splitlines():
        if line.startswith("Plural-Forms:") and "nplurals=" in line:
            return int(line.split("nplurals=")[1].split(";")[0])
    raise AssertionError("the catalogue's header has no Plural-Forms")


def describe(entry: Entry) -> str:
    context = f" (context {entry.msgctxt!r})" if entry.msgctxt else ""
    return f"{entry.msgid!r}{context}"


def test_every_app_has_a_catalogue_or_is_in_the_projects():
    uncovered = [
        package
        for package in first_party_packages()
        if package not in PROJECT_SOURCES and package not in APPS_WITH_CATALOGUES
    ]
    assert not uncovered, f"no catalogue covers {uncovered}: add <app>/{PO} (docs/operations.md)"


@pytest.mark.parametrize("name", sorted(CATALOGUES))
def test_catalogue_has_every_string_of_the_code_translated(name, tmp_path, monkeypatch):
    require_gettext()
    base, sources = CATALOGUES[name]
    committed_path = ROOT / base / PO
    assert committed_path.exists(), f"{name}: {base / PO} is missing"
    committed = read_po(committed_path)
    header = next(entry for entry in committed if entry.msgid == "" and entry.msgctxt is None)
    plurals = nplurals(header)
    in_code = extracted(sources, tmp_path / name, monkeypatch)
    known = {entry.key for entry in committed}

    problems = [
        f"in the code, not in {base / PO}: {describe(entry)}"
        for entry in in_code
        if entry.msgid and entry.key not in known
    ]
    for entry in committed:
        if entry is header:
            continue
        if entry.fuzzy:
            problems.append(f"fuzzy: {describe(entry)}")
        elif not entry.translated:
            problems.append(f"untranslated: {describe(entry)}")
        elif entry.msgid_plural is not None and len(entry.msgstr) != plurals:
            problems.append(f"{len(entry.msgstr)} plural forms, not {plurals}: {describe(entry)}")
    assert not problems, (
        f"{name} catalogue ({base / PO}): {len(problems)} problem(s); run makemessages and "
        "translate (docs/operations.md, Languages):\n" + "\n".join(problems)
    )


def test_no_string_is_translated_differently_by_two_catalogues():
    """Django merges the catalogues into one (the project's over the apps', an app listed
    earlier in INSTALLED_APPS over a later one): a string translated in two ways is shown
    in one of them everywhere. Give such strings a context (pgettext_lazy("mailbox",
    "enabled"), {% translate "name" context "..." %}) or the same translation."""
    seen: dict[tuple[str | None, str, str | None], tuple[str, list[str]]] = {}
    conflicts = []
    for name, (base, _sources) in sorted(CATALOGUES.items()):
        path = ROOT / base / PO
        if not path.exists():
            continue
        for entry in read_po(path):
            if not entry.msgid or not entry.translated or entry.fuzzy:
                continue
            # gettext and ngettext of one msgid are different strings to gettext.
            key = (entry.msgctxt, entry.msgid, entry.msgid_plural)
            other = seen.setdefault(key, (name, entry.msgstr))
            if other[1] != entry.msgstr:
                conflicts.append(
                    f"{describe(entry)}: {other[0]} says {other[1]}, {name} says {entry.msgstr}"
                )
    assert not conflicts, "translated differently:\n" + "\n".join(conflicts)


def test_compiled_catalogue_reads_back_as_gettext_does(tmp_path):
    from gettext import GNUTranslations

    from build_locale import write_mo

    po = tmp_path / "django.po"
    po.write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
        '"Plural-Forms: nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && '
        'n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2);\\n"\n\n'
        'msgid "Log in"\nmsgstr "Войти"\n\n'
        'msgctxt "button"\nmsgid "Retry"\nmsgstr "Повторить"\n\n'
        'msgid "%(count)s message"\nmsgid_plural "%(count)s messages"\n'
        'msgstr[0] "%(count)s сообщение"\nmsgstr[1] "%(count)s сообщения"\n'
        'msgstr[2] "%(count)s сообщений"\n\n'
        '#, fuzzy\nmsgid "Queued"\nmsgstr "В очереди"\n\n'
        'msgid "Untranslated"\nmsgstr ""\n\n'
        'msgid ""\n"Two \\"lines\\"\\n"\n"joined"\nmsgstr "Две \\"строки\\"\\nвместе"\n',
        encoding="utf-8",
    )
    mo = tmp_path / "django.mo"
    write_mo(read_po(po), mo)
    with mo.open("rb") as file:
        translations = GNUTranslations(file)
    assert translations.gettext("Log in") == "Войти"
    assert translations.pgettext("button", "Retry") == "Повторить"
    forms = [translations.ngettext("%(count)s message", "%(count)s messages", n) for n in (1, 3, 5)]
    assert forms == ["%(count)s сообщение", "%(count)s сообщения", "%(count)s сообщений"]
    assert translations.gettext("Queued") == "Queued"  # fuzzy: left out, as msgfmt does
    assert translations.gettext("Untranslated") == "Untranslated"
    assert translations.gettext('Two "lines"\njoined') == 'Две "строки"\nвместе'
