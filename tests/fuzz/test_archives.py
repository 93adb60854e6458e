"""Properties of pricefeed.parsing's archive path: generated archives expand to exactly
their files, limits only ever refuse, unsafe names are refused, and damaged archives
(or workbooks) end in a ParseError, never another exception."""

from __future__ import annotations

import io
import tarfile
import zipfile

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from pricefeed.parsing import Limits, ParseError, UnsafeEntryName, expand, parse

from .checks import assert_consistent
from .strategies import (
    archives,
    leaf_files,
    make_tar,
    make_zip,
    mutated,
    safe_names,
    unsafe_names,
    workbooks,
)

small_limits = st.builds(
    Limits,
    max_file_bytes=st.integers(1, 16384),
    max_total_inflated=st.integers(1, 32768),
    max_entries=st.integers(1, 12),
    max_depth=st.integers(1, 3),
    max_ratio=st.integers(1, 300),
)


def assert_safe_path(path: str) -> None:
    assert path and not path.startswith("/") and "\\" not in path
    assert ".." not in path.split("/") and "" not in path.split("/")
    assert not any(ord(ch) < 32 for ch in path)


def parse_or_refuse(data: bytes, limits: Limits) -> None:
    try:
        parsed = parse(data, limits=limits)
    except ParseError as exc:
        event(f"parse refused: {type(exc).__name__}")
        return
    event(f"parsed: {parsed.format}")
    assert_consistent(parsed, limits)


@given(archives())
def test_generated_archives_expand_to_exactly_their_files(archive):
    members = expand(archive.data, "attachment", Limits())
    assert [(m.path, m.data) for m in members] == archive.members


@given(archives(), small_limits)
def test_limits_only_refuse_never_change_what_is_expanded(archive, limits):
    try:
        members = expand(archive.data, "attachment", limits)
    except ParseError:
        return
    assert [(m.path, m.data) for m in members] == archive.members
    assert all(len(m.data) <= limits.max_file_bytes for m in members)
    total = sum(len(m.data) for m in members)
    if archive.kind == "tar":
        # Tar members are copies of the attachment's bytes, not inflations.
        assert total <= len(archive.data)
    else:
        assert total <= limits.max_total_inflated


@given(
    st.lists(st.tuples(safe_names, leaf_files), max_size=3, unique_by=lambda f: f[0]),
    unsafe_names,
    st.integers(0, 3),
    st.sampled_from(["zip", "tar"]),
)
def test_an_archive_with_an_unsafe_name_is_refused_as_a_whole(files, unsafe, at, kind):
    files.insert(min(at, len(files)), (unsafe, b"1;2\n"))
    data = make_zip(files, zipfile.ZIP_STORED, False) if kind == "zip" else make_tar(files)
    with pytest.raises(UnsafeEntryName):
        expand(data, "attachment", Limits())


@given(st.sampled_from([tarfile.SYMTYPE, tarfile.LNKTYPE]), safe_names, st.integers(0, 2))
def test_a_tar_with_a_link_is_refused(link_type, name, at):
    entries = []
    for i in range(2):
        entry = tarfile.TarInfo(f"f{i}.csv")
        entry.size = 4
        entries.append(entry)
    link = tarfile.TarInfo(name)
    link.type = link_type
    link.linkname = "../../etc/passwd"
    entries.insert(at, link)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for entry in entries:
            tf.addfile(entry, io.BytesIO(b"1;2\n") if entry.isreg() else None)
    with pytest.raises(UnsafeEntryName):
        expand(buf.getvalue(), "attachment.tar", Limits())


damaged = st.one_of(
    mutated(archives().map(lambda a: a.data)),
    workbooks,
    mutated(workbooks),
    st.binary(max_size=1024),
)


@given(damaged, st.integers(0, 3).flatmap(lambda i: small_limits if i == 3 else st.just(Limits())))
def test_damaged_archives_expand_or_raise_a_parse_error_and_so_do_their_files(data, limits):
    try:
        members = expand(data, "attachment.zip", limits)
    except ParseError:
        members = []
    assert len(members) <= max(limits.max_entries, 1)
    for member in members:
        if member.path:
            assert_safe_path(member.path)
        assert len(member.data) <= limits.max_file_bytes
        parse_or_refuse(member.data, limits)
    parse_or_refuse(data, limits)
