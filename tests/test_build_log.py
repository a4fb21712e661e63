"""A failed setup or build prints the last lines of its own output, not of
the shared, appended log in LAB_CACHE/logs (a previous run's error, another
checkout's lines); the shared log still gets this output appended."""
from __future__ import annotations

import shutil
from pathlib import Path

from conftest import MIRROR, ROOT, lab, lab_env
from lab.setup import sources


def test_a_failed_ada_source_check_shows_only_its_own_output(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    shutil.copytree(ROOT / MIRROR, mirror)
    ews = sources.load()["ews"]
    (mirror / ews.archive).unlink()
    cache = tmp_path / "cache"
    (cache / "logs").mkdir(parents=True)
    shared = cache / "logs" / "build-ews.log"
    shared.write_text("".join(f"OLD LINE {i} of another checkout\n" for i in range(40)))
    env = lab_env(tmp_path, SERVER="ews", ADA_SOURCES=str(mirror), LAB_CACHE=str(cache))
    out = lab(env, "build", "ews", timeout=300)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "not in ADA_SOURCES" in out.stderr
    assert "OLD LINE" not in out.stderr
    text = shared.read_text()
    assert text.startswith("OLD LINE 0") and "not in ADA_SOURCES" in text
    assert sorted(p.name for p in (cache / "logs").iterdir()) == ["build-ews.log"]
