"""A run's Reproduce line read back through the lab's own settings parser
(lab.setup.fromenv; make cost's lab.studies.cost.planned): the plan the line
gives, to compare with the plan the run's manifest records (lab.setup.plan;
issue 53: the line must run the same experiment)."""
from __future__ import annotations

import shlex
from collections.abc import Collection

from conftest import ROOT
from lab.measure.clients import axes
from lab.setup.fromenv import Traits, from_env
from lab.setup.plan import RunPlan
from lab.setup.servers import discover


def line_settings(line: str) -> tuple[str, dict[str, str]]:
    """`make <step> K=V ...` as the step and its settings."""
    words = shlex.split(line)
    assert words[:1] == ["make"] and len(words) > 1, line
    env = {}
    for word in words[2:]:
        name, sep, value = word.partition("=")
        assert sep and name, f"{word!r} in {line!r} is not NAME=value"
        env[name] = value
    return words[1], env


def plan_of_line(line: str, known: list[str] | None = None,
                 clients: dict[str, str] | Collection[str] | None = None,
                 cpus: set[int] | None = None) -> RunPlan:
    """The plan the Reproduce line gives: its settings alone (each one it
    does not carry at its registry default), checked as the step checks them.
    `known`: the servers the line may name (None: those the lab finds, with
    the line's LAB_SERVER_PATH)."""
    step, env = line_settings(line)
    traits: dict[str, Traits] = {}
    if known is None:
        found = discover(ROOT, env.get("LAB_SERVER_PATH", ""))
        known = list(found)
        traits = {n: Traits(s.language, s.has_workers) for n, s in found.items()}
    params = from_env(env, known, axes() if clients is None else clients, available_cpus=cpus,
                      traits=traits)
    if step == "cost":
        from lab.studies import cost
        return cost.planned(env, params)
    assert step == "bench", line
    return RunPlan.of(params)
