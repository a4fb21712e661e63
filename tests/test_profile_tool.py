"""make profile: a profiler that fails says why, in its own words.

perf's -q silences its own error messages too: `perf record failed: ` with an
empty reason was all a user saw (issue 32, exercise 8). A fake perf on PATH
stands in for the real one, so that the test needs no PMU, no root and no server."""
from __future__ import annotations

import os
import stat
import types
from pathlib import Path

import pytest

from lab.studies import profile

pytestmark = pytest.mark.unit

FAKE_PERF = """#!/bin/sh
# a perf that refuses to record, as perf does when perf_event_paranoid forbids it;
# like perf, -q silences its message
for a in "$@"; do [ "$a" = "-q" ] && exit 255; done
echo "Error: Access to performance monitoring and observability operations is limited." >&2
echo "Consider adjusting /proc/sys/kernel/perf_event_paranoid setting" >&2
exit 255
"""
SILENT_PERF = "#!/bin/sh\nexit 3\n"


def fake_tool(folder: Path, name: str, script: str) -> None:
    tool = folder / name
    tool.write_text(script)
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize("script, said", [
    (FAKE_PERF, "Access to performance monitoring and observability operations is limited"),
    (SILENT_PERF, "exit 3, and it printed no message"),
])
def test_a_failed_perf_record_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       script: str, said: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_tool(bin_dir, "perf", script)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "profile"
    out.mkdir()
    server = types.SimpleNamespace(pid=os.getpid())     # perf is given this process's tree
    with pytest.raises(profile.ProfileError) as e:
        profile.record_native(server, 1, out)   # type: ignore[arg-type]
    message = str(e.value)
    assert message.startswith("perf record failed: ")
    assert said in message
    assert message.split(":", 1)[1].strip()     # never an empty reason


def test_tool_said_keeps_the_tools_words_and_status() -> None:
    assert profile.tool_said(1, b"", b"first\nError: no such event\n") == \
        "first | Error: no such event (exit 1)"
    assert profile.tool_said(2, b"on stdout only\n", b"") == "on stdout only (exit 2)"
    assert profile.tool_said(-9, b"", b"") == "killed by signal 9, and it printed no message"
