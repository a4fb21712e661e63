"""The layout is the architecture: lab/ is role packages, and a role imports
only the roles below it. Read from the package graph (every import, at the
top or inside a function), not from hand-kept lists of modules."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.unit

LAB = ROOT / "lab"
# What each role may import besides itself. What analyses or presents a run
# never imports what measures one (measure, studies) nor the host's process
# handling (host).
ALLOWED: dict[str, frozenset[str]] = {
    "setup": frozenset(),
    "host": frozenset({"setup"}),
    "record": frozenset({"setup", "host"}),
    "analyse": frozenset({"setup", "record"}),
    "present": frozenset({"setup", "record", "analyse"}),
    "measure": frozenset({"setup", "host", "record", "analyse"}),
    "studies": frozenset({"setup", "host", "record", "analyse", "present", "measure"}),
}
ENTRY = {"__init__", "__main__", "cli"}      # lab/ itself: the front door may import any role


def role_of(module: str) -> str:
    """'lab.analyse.metrics' -> 'analyse'; 'lab.cli' -> 'cli'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports(path: Path, package: str) -> set[str]:
    """The lab modules a file imports, wherever the import statement stands."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name == "lab" or a.name.startswith("lab.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == "lab":
                found |= {f"lab.{a.name}" for a in node.names}
            elif module.startswith("lab."):
                found.add(module)
    return found


def modules(root: Path = LAB) -> dict[str, Path]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def breaches(root: Path = LAB) -> list[str]:
    found = []
    for module, path in modules(root).items():
        role = role_of(module)
        if role in ENTRY or module == "lab":
            continue
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for target in sorted(imports(path, package)):
            other = role_of(target)
            if other != role and other not in ALLOWED[role]:
                found.append(f"{module} ({role}) imports {target} ({other})")
    return found


def test_every_module_lives_in_a_role_package() -> None:
    stray = [m for m in modules() if m != "lab" and role_of(m) not in ALLOWED
             and role_of(m) not in ENTRY]
    assert not stray, f"modules outside the role packages {sorted(ALLOWED)}: {stray}"
    for role in ALLOWED:
        doc = ast.get_docstring(ast.parse((LAB / role / "__init__.py").read_text()))
        assert doc and doc.split(":")[0].lower() == role, f"lab/{role}/__init__.py says its role first"


def test_each_role_imports_only_the_roles_below_it() -> None:
    assert breaches() == []


def planted(tmp_path: Path, where: str, text: str) -> Path:
    """A lab/ of empty role packages with one module planted at `where`."""
    root = tmp_path / "lab"
    for r in ALLOWED:
        (root / r).mkdir(parents=True)
        (root / r / "__init__.py").write_text(f'"""{r}: ..."""\n')
    (root / where).write_text(text)
    return root


@pytest.mark.parametrize("where, text, role", [
    ("present/view.py", "from lab.measure import sweep\n", "measure"),
    ("analyse/view.py", "def f() -> None:\n    from lab.studies.cost import run\n", "studies"),
    ("analyse/view.py", "import lab.host.procs\n", "host"),
    ("record/x.py", "from lab import measure\n", "measure"),
])
def test_the_check_sees_every_kind_of_import(tmp_path: Path, where: str, text: str,
                                             role: str) -> None:
    got = breaches(planted(tmp_path, where, text))
    assert len(got) == 1 and got[0].endswith(f"({role})"), got


# What analyses or records a run returns facts (numbers, kinds, flags, short
# labels); lab.present words them in each format (issue 53).
WRITERS = ("lab.setup.markdown", "lab.present")


def named(path: Path, package: str) -> set[str]:
    """imports() and, for `from a.b import c`, a.b.c too (c may be a module)."""
    found = imports(path, package)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and not node.level and \
                (node.module or "").startswith("lab."):
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def markdown_writers(root: Path = LAB) -> list[str]:
    found = []
    for module, path in modules(root).items():
        if role_of(module) not in ("analyse", "record"):
            continue
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        got = named(path, package)
        found += [f"{module} imports {w}" for w in WRITERS
                  if any(t == w or t.startswith(w + ".") for t in got)]
    return found


def test_analyse_and_record_write_no_markdown() -> None:
    assert markdown_writers() == []


@pytest.mark.parametrize("where, text, found", [
    ("analyse/view.py", "from lab.setup.markdown import Table\n", "lab.setup.markdown"),
    ("analyse/view.py", "def f() -> None:\n    from lab.setup import markdown\n",
     "lab.setup.markdown"),
    ("record/x.py", "from lab.present import page\n", "lab.present"),
    ("record/x.py", "from lab.setup import paths\n", ""),
    ("present/x.py", "from lab.setup.markdown import Table\n", ""),
])
def test_the_markdown_check_sees_a_planted_writer(tmp_path: Path, where: str, text: str,
                                                  found: str) -> None:
    got = markdown_writers(planted(tmp_path, where, text))
    assert got == ([f"lab.{where[:-3].replace('/', '.')} imports {found}"] if found else []), got
