"""The pinned Ada sources (servers/ada/sources.toml, lab/setup/sources.py): the content
check, and a missing or tampered archive stopping the lab with exit 2 before
anything is built."""
from __future__ import annotations

import gzip
import io
import shutil
import tarfile
from pathlib import Path

import pytest

from conftest import MIRROR, ROOT, lab, lab_env
from lab.setup import sources
from lab.setup.sources import Source, SourceError

pytestmark = pytest.mark.unit

HAVE_MIRROR = (ROOT / MIRROR).is_dir()


def make_archive(path: Path, top: str, files: dict[str, bytes], mtime: int = 0,
                 level: int = 9) -> Path:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mtime, info.mode = len(data), mtime, 0o644
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip.compress(raw.getvalue(), compresslevel=level, mtime=mtime))
    return path


def source(archive: str, digest: str = "", omit: tuple[str, ...] = (),
           url: str = "http://127.0.0.1:9/none.tar.gz") -> Source:
    return Source(name="lib", url=url, commit="0" * 40, version="1", license="x",
                  archive=archive, content_sha256=digest, archive_sha256="", omit=omit)


FILES = {"src/a.adb": b"package body A is end A;\n", "README": b"lib\n"}


def test_the_digest_is_of_the_content_not_of_the_archive_file(tmp_path: Path) -> None:
    """A mirror's git archive and the upstream host's archive of one commit have
    different gzip bytes; they pass the same check."""
    one = make_archive(tmp_path / "one.tar.gz", "lib-0000", FILES, mtime=1, level=9)
    two = make_archive(tmp_path / "two.tar.gz", "lib-other", FILES, mtime=2, level=1)
    assert one.read_bytes() != two.read_bytes()
    assert sources.content_digest(one, source("one")) == sources.content_digest(two, source("two"))
    changed = make_archive(tmp_path / "three.tar.gz", "lib-0000",
                           {**FILES, "README": b"lib!\n"})
    assert sources.content_digest(changed, source("x")) != sources.content_digest(one, source("x"))


def test_an_omitted_path_is_neither_digested_nor_unpacked(tmp_path: Path) -> None:
    """The Simple Components mirror lacks sqlite3.c: with `omit`, an archive that
    has it and one that does not pass the same check."""
    full = make_archive(tmp_path / "full.tar.gz", "lib-0", {**FILES, "big.c": b"x" * 100})
    mirror = make_archive(tmp_path / "mirror.tar.gz", "lib-0", FILES)
    src = source("full.tar.gz", omit=("big.c",))
    assert sources.content_digest(full, src) == sources.content_digest(mirror, src)
    src = source("full.tar.gz", sources.content_digest(full, src), omit=("big.c",))
    tree = sources.unpack(src, full, tmp_path / "out")
    assert (tree / "src" / "a.adb").read_bytes() == FILES["src/a.adb"]
    assert not (tree / "big.c").exists() and (tree / sources.STAMP).is_file()


def test_unsafe_members_are_refused(tmp_path: Path) -> None:
    bad = make_archive(tmp_path / "bad.tar.gz", "lib-0", {"../escape": b"x"})
    with pytest.raises(SourceError, match="unsafe member"):
        sources.content_digest(bad, source("bad.tar.gz"))


def test_a_missing_archive_without_a_mirror_says_how_to_provide_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No ADA_SOURCES and the upstream host unreachable (here: a closed port)."""
    monkeypatch.setenv("LAB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(SourceError) as err:
        sources.locate(source("lib-0.tar.gz"), env={})
    assert "lib-0.tar.gz" in str(err.value) and "ADA_SOURCES" in str(err.value)
    assert not (tmp_path / "cache" / "sources" / "lib-0.tar.gz").exists()


def test_a_downloaded_archive_is_kept_in_the_cache(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ADA_SOURCES the archive is fetched once into the cache (a file://
    URL stands in for the upstream host)."""
    upstream = make_archive(tmp_path / "up.tar.gz", "lib-0", FILES)
    monkeypatch.setenv("LAB_CACHE", str(tmp_path / "cache"))
    src = source("lib-0.tar.gz", sources.content_digest(upstream, source("x")),
                 url=upstream.as_uri())
    got = sources.check(src, env={})
    assert got == tmp_path / "cache" / "sources" / "lib-0.tar.gz"
    upstream.unlink()                               # a second time needs no download
    assert sources.check(src, env={}) == got
    assert [p.name for p in got.parent.iterdir()] == ["lib-0.tar.gz"]


def test_a_download_that_fails_its_check_is_not_kept(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    upstream = make_archive(tmp_path / "up.tar.gz", "lib-0", FILES)
    monkeypatch.setenv("LAB_CACHE", str(tmp_path / "cache"))
    src = source("lib-0.tar.gz", "0" * 64, url=upstream.as_uri())
    with pytest.raises(SourceError, match="content digest"):
        sources.check(src, env={})
    assert list((tmp_path / "cache" / "sources").iterdir()) == []


def test_an_archive_checked_from_ada_sources_is_kept_for_offline_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
        ) -> None:
    """One build with ADA_SOURCES=DIR; later commands without it find the
    archive in the cache, with no download (the URL is a closed port, as
    offline), and the mirror may be gone."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    archive = make_archive(mirror / "lib-0.tar.gz", "lib-0", FILES)
    monkeypatch.setenv("LAB_CACHE", str(tmp_path / "cache"))
    src = source("lib-0.tar.gz", sources.content_digest(archive, source("x")))
    assert sources.check(src, env={"ADA_SOURCES": str(mirror)}) == archive
    cached = tmp_path / "cache" / "sources" / "lib-0.tar.gz"
    assert cached.read_bytes() == archive.read_bytes()
    assert "kept in" in capsys.readouterr().err
    shutil.rmtree(mirror)
    assert sources.check(src, env={}) == cached
    assert "downloading" not in capsys.readouterr().err


def test_an_archive_that_fails_its_check_is_never_kept(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A tampered mirror archive stays where it is and does not enter the cache;
    a file already in the cache is never overwritten by a mirror's."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    good = make_archive(tmp_path / "good.tar.gz", "lib-0", FILES)
    src = source("lib-0.tar.gz", sources.content_digest(good, source("x")))
    make_archive(mirror / "lib-0.tar.gz", "lib-0", {**FILES, "README": b"changed\n"})
    monkeypatch.setenv("LAB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(SourceError, match="content digest"):
        sources.check(src, env={"ADA_SOURCES": str(mirror)})
    assert not (tmp_path / "cache" / "sources" / "lib-0.tar.gz").exists()
    shutil.copy(good, mirror / "lib-0.tar.gz")
    mine = tmp_path / "cache" / "sources" / "lib-0.tar.gz"
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_bytes(b"someone else's file")
    sources.check(src, env={"ADA_SOURCES": str(mirror)})
    assert mine.read_bytes() == b"someone else's file"


def test_the_manifest_pins_every_library_the_servers_name() -> None:
    pinned = sources.load()
    named = set()
    for gpr in (ROOT / "servers" / "ada").glob("*/*.gpr"):
        for line in gpr.read_text().splitlines():
            if line.startswith("-- lab-libraries:"):
                named |= set(line.split(":", 1)[1].split())
    assert named == set(pinned) == {"ada-util", "ada-el", "ada-security", "ada-servlet",
                                    "ews", "simple-components"}
    for s in pinned.values():
        assert s.commit in s.url and s.commit in s.archive and len(s.content_sha256) == 64


@pytest.mark.skipif(not HAVE_MIRROR, reason=f"no mirror at {MIRROR}")
def test_the_mirror_passes_its_checks() -> None:
    env = {"ADA_SOURCES": MIRROR}
    for s in sources.load().values():
        assert sources.check(s, env).name == s.archive


@pytest.mark.fault
@pytest.mark.skipif(not HAVE_MIRROR, reason=f"no mirror at {MIRROR}")
@pytest.mark.parametrize("fault", ["missing", "tampered"])
def test_a_bad_archive_exits_2_naming_it_before_anything_is_built(tmp_path: Path,
                                                                 fault: str) -> None:
    """`lab build` with a mirror that lacks the EWS archive, or holds one with a
    changed file: exit 2 naming the archive, and no root, library or server
    build happened (a fresh cache stays without a root)."""
    mirror = tmp_path / "mirror"
    shutil.copytree(ROOT / MIRROR, mirror)
    ews = sources.load()["ews"]
    if fault == "missing":
        (mirror / ews.archive).unlink()
    else:
        tree = tmp_path / "t"
        with tarfile.open(mirror / ews.archive) as tar:
            tar.extractall(tree, filter="data")
        server = tree / ews.folder / "src" / "ews-server.adb"
        server.write_text(server.read_text() + "-- changed\n")
        with tarfile.open(mirror / ews.archive, "w:gz") as tar:
            tar.add(tree / ews.folder, arcname=ews.folder)
    cache = tmp_path / "cache"
    env = lab_env(tmp_path, SERVER="ews", ADA_SOURCES=str(mirror), LAB_CACHE=str(cache))
    out = lab(env, "build", "ews", timeout=300)
    assert out.returncode == 2, out.stderr[-2000:]
    assert ews.archive in out.stderr
    assert ("not in ADA_SOURCES" if fault == "missing" else "content digest") in out.stderr
    assert "[ews] build:" not in out.stderr
    assert not (cache / "ada-bullseye").exists() and not (cache / "ada-build").exists()


@pytest.mark.fault
def test_an_ada_sources_folder_that_does_not_exist_exits_2(tmp_path: Path) -> None:
    env = lab_env(tmp_path, SERVER="aws", ADA_SOURCES="no/such/folder")
    out = lab(env, "check")
    assert out.returncode == 2 and "ADA_SOURCES" in out.stderr
