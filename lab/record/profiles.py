"""<server>/profile/: CPU profiles (make profile, lab.studies.profile), their
settings (profile.json) and folded stacks, read typed."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lab.record import files
from lab.record.checked import Obj
from lab.record.files import RecordError, read_json

PROFILE_DIR = "profile"            # make profile (lab.studies.profile): <server>/profile/
PROFILE_JSON = "profile.json"
FOLDED = "profile.folded"


@dataclass
class Profile:
    """<server>/profile/: how the profile was taken, and its folded stacks."""
    server: str
    profiler: str
    settings: str
    level: int
    axis: str
    client: str
    seconds: int
    rate_rps: float | None             # the client's rate while profiled
    thread_root: bool                  # each stack starts with the thread's name
    flamegraph: str                    # relative to the run folder
    stacks: list[tuple[list[str], int]]


def read_folded(path: Path) -> list[tuple[list[str], int]]:
    """Folded stacks: "frame;frame;frame count" per line."""
    stacks = []
    for line in files.read_bytes(path).decode(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks.append((stack.split(";"), int(count)))
    return stacks


def read_profiles(run: Path) -> dict[str, Profile | str]:
    """Each server's profile, or why it cannot be read (shown, never fatal)."""
    out: dict[str, Profile | str] = {}
    # <server>/profile/<level>/ (c8, c8-2: one folder per profile), or
    # <server>/profile/ itself (runs profiled before levels had folders)
    found = sorted(run.glob(f"*/{PROFILE_DIR}/{PROFILE_JSON}")) + \
        sorted(run.glob(f"*/{PROFILE_DIR}/*/{PROFILE_JSON}"))
    found = [p for p in found if not any(part.startswith(".") for part in
                                         p.relative_to(run).parts)]   # a profile under way
    several = {p.parts[len(run.parts)] for p in found
               if sum(q.parts[len(run.parts)] == p.parts[len(run.parts)] for q in found) > 1}
    for path in found:
        folder = path.parent.relative_to(run)
        name = folder.parts[0]
        key = f"{name} ({folder.name})" if name in several and len(folder.parts) > 2 else name
        try:
            o = Obj(read_json(path), path, "")
            graph = o.text("flamegraph")
            if graph:
                files.part(graph, path)     # a file of the profile's folder, never a path
            out[key] = Profile(
                server=name, profiler=o.text("profiler"), settings=o.text("settings"),
                level=o.integer("level"), axis=o.text("axis"), client=o.text("client"),
                seconds=o.integer("seconds"), rate_rps=o.opt_num("rate_during_profile"),
                thread_root=o.flag("thread_root"),
                flamegraph=f"{folder.as_posix()}/{graph}" if graph else "",
                stacks=read_folded(path.parent / FOLDED))
        except (RecordError, OSError) as e:
            out[key] = str(e)
    return out
