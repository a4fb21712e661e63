"""A run's rule and plan (lab.setup.plan.RunPlan) read back from manifest.json:
its `run_plan` object, or for a run made before it was recorded, the plan
built once here from what that run did record (`params`, `settings`, its
kind), so that nothing after reads the rule from raw settings again."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lab.record.checked import Obj
from lab.setup.params import LOAD_AXES, Repeat
from lab.setup.plan import DEFAULT_ALPHA, DEFAULT_DELTA_PCT, DESIGNS, KINDS, RunPlan

if TYPE_CHECKING:
    from lab.record.manifest import RunParams

KEY = "run_plan"


def parse(o: Obj) -> RunPlan:
    """A recorded `run_plan` object, checked (RecordError names what is wrong)."""
    rep, warm = o.obj("repeat", True), o.obj("warmup", True)
    least = rep.integer("least", None)
    plan = RunPlan(alpha=o.opt_num("alpha") or DEFAULT_ALPHA,
                   min_effect_pct=_num(o.opt_num("min_effect_pct"), DEFAULT_DELTA_PCT),
                   design=o.text("paired"),
                   repeat=Repeat(least, rep.integer("most", least), rep.flag("auto")),
                   axis=o.text("axis", None), values=tuple(o.ints("values")),
                   load_axis=o.text("load_axis", "concurrency"), load=tuple(o.ints("load")),
                   duration_s=o.integer("duration_s", 0), warmup_auto=warm.flag("auto"),
                   warmup_s=warm.integer("seconds", 0), warmup_max_s=warm.integer("max_s", 0),
                   kind=o.text("kind", "bench"))
    if not 0 < plan.alpha < 1:
        raise o.fail("alpha", "a fraction above 0 and below 1")
    if not 0 <= plan.min_effect_pct <= 100:
        raise o.fail("min_effect_pct", "a percentage from 0 to 100")
    if plan.design not in DESIGNS:
        raise o.fail("paired", f"one of {', '.join(repr(d) for d in DESIGNS)}")
    if plan.load_axis not in LOAD_AXES:
        raise o.fail("load_axis", " or ".join(LOAD_AXES))
    if plan.kind not in KINDS:
        raise o.fail("kind", f"one of {', '.join(KINDS)}")
    return plan


def _num(x: float | None, default: float) -> float:
    return default if x is None else x


def _ints(value: Any) -> tuple[int, ...]:
    ok = isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool)
                                         for v in value)
    return tuple(value) if ok else ()


def _words(text: str) -> tuple[int, ...]:
    words = text.replace(",", " ").split()
    return tuple(int(w) for w in words) if all(w.isdigit() for w in words) else ()


def older(p: RunParams, settings: dict[str, str], kind: str) -> RunPlan:
    """The plan of a run made before `run_plan` was recorded, from its checked
    `params` (the rule as it was recorded, else the rule's defaults)."""
    alpha, delta = p.extra.get("alpha"), p.extra.get("min_effect_pct")
    load_axis = str(p.extra.get("load_axis") or "")
    if load_axis not in LOAD_AXES:     # a run made before load_axis was recorded
        load_axis = "rate" if p.axis == "rate" else "concurrency"
    load = _ints(p.extra.get("levels" if load_axis == "concurrency" else "rates"))
    values = _ints(p.extra.get("values")) or load
    if kind == "cost":
        levels = _words(settings.get("COST_LEVELS", "")) or values
        return RunPlan(repeat=Repeat(p.repeat.least, p.repeat.least), values=levels,
                       load=levels, kind="cost")
    return RunPlan(
        alpha=float(alpha) if isinstance(alpha, (int, float)) and 0 < alpha < 1
        else DEFAULT_ALPHA,
        min_effect_pct=float(delta) if isinstance(delta, (int, float)) and 0 <= delta <= 100
        else DEFAULT_DELTA_PCT,
        design=p.paired if p.paired in DESIGNS and p.paired else "",
        repeat=p.repeat, axis=p.axis or "concurrency", values=values, load_axis=load_axis,
        load=load, duration_s=p.duration_s, warmup_auto=bool(p.warmup_auto),
        warmup_s=p.warmup_s or 0, warmup_max_s=p.warmup_max_s or 0)
