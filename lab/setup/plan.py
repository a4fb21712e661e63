"""A run's rule and plan as one typed record (`RunPlan`), made once in setup
from the checked settings (lab.setup.fromenv's Params): α and δ, the design
(PAIRED), REPEAT (least, most, auto: the budget of starts the looks of
lab.analyse.policy are spread over), the swept axis and its values, the
client's levels, the duration and the warm-up.

It is written into manifest.json (`run_plan`, lab.record.manifest) and read
back typed; what reads a run takes the rule and plan from it. The settings
that give this plan again (`settings`) are the ones the run's Reproduce line
carries, so the line runs the same experiment.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.setup.params import KNOBS, SETTINGS, Params, Repeat, check_alpha, check_min_effect

DESIGNS = ("", "duet", "rmit")      # PAIRED: "" one server at a time
KINDS = ("bench", "cost")            # the step that made the run


def _fraction(x: object) -> float:
    assert isinstance(x, float)
    return x


# the rule's defaults: the ALPHA and MIN_EFFECT settings' own (declared once, in the registry)
DEFAULT_ALPHA = _fraction(check_alpha(SETTINGS["ALPHA"].default))
DEFAULT_DELTA_PCT = _fraction(check_min_effect(SETTINGS["MIN_EFFECT"].default))


def decimal(x: float) -> str:
    """A number as the settings write it: plain decimals, no exponent."""
    return f"{x:.10f}".rstrip("0").rstrip(".") or "0"


@dataclass(frozen=True)
class RunPlan:
    """What a run decides with and how much it measures (see the module)."""
    alpha: float = DEFAULT_ALPHA          # ALPHA, a fraction
    min_effect_pct: float = DEFAULT_DELTA_PCT   # MIN_EFFECT (δ), %
    design: str = ""                      # PAIRED: "", duet or rmit
    repeat: Repeat = Repeat()             # REPEAT (REPEAT_MIN, REPEAT_MAX under auto)
    axis: str = "concurrency"             # what is swept: the client's load or a knob
    values: tuple[int, ...] = ()          # the swept values
    load_axis: str = "concurrency"        # what the client varies: concurrency or rate
    load: tuple[int, ...] = ()            # the client's levels (one, under a knob axis)
    duration_s: int = 0                   # per level (0: a make cost run counts requests)
    warmup_auto: bool = False
    warmup_s: int = 0
    warmup_max_s: int = 0
    kind: str = "bench"                   # the step that made the run: bench or cost

    @classmethod
    def of(cls, params: Params) -> RunPlan:
        """The plan of a make bench run, from its checked settings."""
        return cls(alpha=params.alpha, min_effect_pct=params.min_effect_pct,
                   design=params.paired, repeat=params.repeat, axis=params.axis,
                   values=params.values, load_axis=params.load_axis, load=params.load,
                   duration_s=params.duration_s, warmup_auto=params.warmup_auto,
                   warmup_s=params.warmup_s, warmup_max_s=params.warmup_max_s)

    @classmethod
    def of_cost(cls, levels: tuple[int, ...], repeat: int) -> RunPlan:
        """The plan of a make cost run: exact request counts at COST_LEVELS,
        `repeat` starts each, no verdict rule of its own (the defaults)."""
        return cls(repeat=Repeat(repeat, repeat), values=levels, load=levels, kind="cost")

    @property
    def paired(self) -> bool:
        return bool(self.design)

    def settings(self) -> dict[str, str]:
        """The settings that give this plan again, as the Reproduce line writes them."""
        if self.kind == "cost":
            return {"REPEAT": str(self.repeat.least), "COST_LEVELS": " ".join(map(str, self.values))}
        out = {"ALPHA": f"{decimal(100 * self.alpha)}%",
               "MIN_EFFECT": f"{decimal(self.min_effect_pct)}%",
               "PAIRED": self.design,
               "REPEAT": "auto" if self.repeat.auto else str(self.repeat.least),
               "DURATION": f"{self.duration_s}s",
               "WARMUP": "auto" if self.warmup_auto else f"{self.warmup_s}s",
               "WARMUP_MAX": f"{self.warmup_max_s}s",
               "AXIS": self.axis if self.axis in KNOBS else "",
               "VALUES": " ".join(map(str, self.values)) if self.axis in KNOBS else "",
               ("CONCURRENCY" if self.load_axis == "concurrency" else "RATE"):
                   " ".join(map(str, self.load))}
        if self.repeat.auto:
            out.update(REPEAT_MIN=str(self.repeat.least), REPEAT_MAX=str(self.repeat.most))
        return out

    def to_json(self) -> dict[str, Any]:
        """As manifest.json keeps it (`run_plan`): REPEAT as least, most and auto."""
        return {"kind": self.kind, "alpha": self.alpha, "min_effect_pct": self.min_effect_pct,
                "paired": self.design,
                "repeat": {"least": self.repeat.least, "most": self.repeat.most,
                           "auto": self.repeat.auto},
                "axis": self.axis, "values": list(self.values), "load_axis": self.load_axis,
                "load": list(self.load), "duration_s": self.duration_s,
                "warmup": {"auto": self.warmup_auto, "seconds": self.warmup_s,
                           "max_s": self.warmup_max_s}}
