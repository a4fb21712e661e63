"""`python3 -m lab agree RUN_A RUN_B` in words: how far two runs agree
(lab.analyse.agree's pairs), one line per pair and level and the two counts,
for docs/results.md."""
from __future__ import annotations

import sys
from pathlib import Path

from lab.analyse import analysis
from lab.analyse.agree import Pair, identical, pairs
from lab.record.files import RecordError
from lab.setup.exits import Exit
from lab.setup.markdown import Table

HEAD = ["level", "pair", "req/s (1)", "req/s (2)", "CPU/req (1)", "CPU/req (2)"]


def report(found: list[Pair], ids: tuple[str, str]) -> list[str]:
    same_rate, same_cpu = identical(found)
    lines = [f"# Agreement of {ids[0]} and {ids[1]}", "",
             *Table(HEAD, [[str(p.value), f"{p.a} vs {p.b}", p.rate[0].text, p.rate[1].text,
                            p.cpu[0].text, p.cpu[1].text] for p in found]).lines()]
    lines += ["", f"Identical verdicts, req/s: {same_rate} of {len(found)}; "
                  f"server CPU per request: {same_cpu} of {len(found)}."]
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python3 -m lab agree RUN_A RUN_B", file=sys.stderr)
        return Exit.BAD_INPUT
    try:
        (_, x), (_, y) = analysis.of(Path(argv[0])), analysis.of(Path(argv[1]))
    except RecordError as e:
        print(f"error: {e}", file=sys.stderr)
        return Exit.BAD_INPUT
    compared = [n for n in x.compared if n in y.compared]
    found = pairs(x.stats, y.stats, compared)
    if not found:
        print("error: the two runs have no pair of servers at a common level: give two runs "
              "of the same servers", file=sys.stderr)
        return Exit.BAD_INPUT
    print("\n".join(report(found, (Path(argv[0]).name, Path(argv[1]).name))))
    return Exit.OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
