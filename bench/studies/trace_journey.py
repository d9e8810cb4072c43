"""How straight a run's request travels: the repository modules a ``bench`` command passes through from the
command line until the work starts (the first training), as one sequence.

    python -m scripts.trace_journey audit -m dp-mlp -d csbm:nodes=300,features=16 -e 4 --no-track
    python -m scripts.trace_journey --stop methods.base:fit_method run -m dp-mlp -d csbm:nodes=300 -e 4 --no-track
    python -m scripts.trace_journey --start bench.audit:audit_one audit -m dp-mlp -d csbm:nodes=300,features=16 -e 4

The command runs under :func:`sys.setprofile` in this process. A call into a function defined in ``bench/``,
``attacks/``, ``audits/`` or ``methods/`` enters that function's module (``sequence``, consecutive repeats merged):
a call into third-party or generated code (a dataclass's ``__init__``) enters nothing, control staying in its
caller's module, and a comprehension's or generator expression's frame is part of the function it is written in
(:data:`INLINE`: whether an interpreter gives a comprehension a frame of its own, as 3.11 does and 3.12 no longer
does, PEP 709, is not a step of the journey). Where control is after every call *and return* is noted too
(``control``: the innermost repository frame, third-party frames attributed to the repository frame that called
them). Code run while a module is being imported is not the journey and is left out. The journey starts at the first
call of ``--start MODULE:FUNCTION`` (default: the command line) and ends where the command hands the resolved
request to the work: ``--stop MODULE:FUNCTION`` (default: ``audits.runner:audit`` for ``audit``,
``audits.verify:verify`` for ``verify``, ``methods.base:fit_method`` otherwise), which is replaced by a function
that stops the command.

Reported (one JSON object), over the modules entered: ``modules`` (distinct modules), ``stays`` (the sequence's
length), ``revisits`` (entries into a module already left) and ``climbs`` (steps from a lower layer to a higher
one: methods < attacks, audits < bench); ``control_revisits`` and ``control_climbs`` count the same over
``control``, so a return from ``methods`` into its ``bench`` caller is a climb too; ``resolutions``: how often each
function that reads part of the request (:data:`RESOLVERS`) was entered.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

PACKAGES = ("bench", "attacks", "audits", "methods")
#: higher climbs: a step from a lower rank to a higher one is a climb
RANK = {"methods": 0, "attacks": 1, "audits": 1, "bench": 2}
#: the functions that read part of a request (a name, an option, the split, the device, the data): the journey
#: counts how often each is entered (``resolutions``); a request resolved once enters each at most once
RESOLVERS = ("bench.datasets.registry:resolve_dataset", "methods.base:get_method", "bench.options:scoped_overrides",
             "bench.hparams:lookup", "bench.split_names:check_split", "bench.splits:make_task",
             "bench.datasets:load_dataset", "methods.device:resolve_device")
#: the frames of an expression, not a function of the module: part of the function they run in (Python 3.12 runs
#: list, dict and set comprehensions inline, PEP 709; counting their frames would count an interpreter's choice)
INLINE = frozenset({"<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"})
STOPS = {"audit": "audits.runner:audit", "verify": "audits.verify:verify"}
DEFAULT_STOP = "methods.base:fit_method"


class Reached(BaseException):
    """Raised where the journey ends (a BaseException: no ``except Exception`` on the way swallows it)."""


def revisits(seq: list[str]) -> int:
    """Entries into a module already left (``seq`` has no consecutive repeats)."""
    return sum(1 for i, m in enumerate(seq) if m in seq[:i])


def climbs(seq: list[str]) -> int:
    """Steps from a lower layer to a higher one."""
    return sum(1 for a, b in zip(seq, seq[1:]) if RANK[top(b)] > RANK[top(a)])


@dataclass
class Journey:
    #: the modules entered (a call into a function of the module), consecutive repeats merged
    sequence: list[str] = field(default_factory=list)
    #: where control is after every call and return (a return into the caller's module counts too)
    control: list[str] = field(default_factory=list)
    #: calls of each of :data:`RESOLVERS`
    resolutions: dict[str, int] = field(default_factory=dict)
    reached: bool = False  # the command got from the start to the stop point (else it ended or failed before)

    @property
    def modules(self) -> int:
        return len(set(self.sequence))

    def summary(self) -> dict[str, Any]:
        return {"modules": self.modules, "stays": len(self.sequence), "revisits": revisits(self.sequence),
                "climbs": climbs(self.sequence),
                "control_revisits": revisits(self.control), "control_climbs": climbs(self.control),
                "reached": self.reached, **asdict(self)}


def top(module: str) -> str:
    return module.split(".", 1)[0]


def module_of(filename: str, cache: dict[str, str | None]) -> str | None:
    """``.../bench/datasets/registry.py`` -> ``bench.datasets.registry``; None outside the four packages (of the
    checkout ``bench`` is imported from) and for this module."""
    if filename in cache:
        return cache[filename]
    import bench

    name = None
    try:
        rel = Path(filename).resolve().relative_to(Path(bench.__file__).resolve().parents[1])
    except (ValueError, OSError):
        rel = None
    if rel is not None and rel.suffix == ".py" and rel.parts[0] in PACKAGES:
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(parts)
        if name == __name__:  # the tracer's own frames are not the journey
            name = None
    cache[filename] = name
    return name


def _patch_stop(target: str, reached: Callable[[], None]) -> Callable[[], None]:
    """Replace ``module:function`` (and every module-level alias of it) by one that calls ``reached`` and raises
    :class:`Reached`; returns the function that puts the original back."""
    import importlib

    mod_name, _, fn_name = target.partition(":")
    original = getattr(importlib.import_module(mod_name), fn_name)

    def stop(*args: Any, **kwargs: Any) -> None:
        reached()
        raise Reached(target)

    patched = []
    for m in list(sys.modules.values()):
        d = getattr(m, "__dict__", None)
        if not d:
            continue
        for k, v in list(d.items()):
            if v is original:
                d[k] = stop
                patched.append((d, k))

    def undo() -> None:
        for d, k in patched:
            d[k] = original

    return undo


def trace(argv: list[str], stop: str | None = None, start: str | None = None) -> Journey:
    """Run ``bench ARGV`` and return its journey from ``start`` (default: the command line) up to ``stop`` (see the
    module docstring)."""
    from bench import cli

    command = cli.command_of(argv)
    journey = Journey()

    started = start is None

    def reached() -> None:
        sys.setprofile(None)
        journey.reached = started  # a journey that never started did not reach the stop either

    undo = _patch_stop(stop or STOPS.get(command or "", DEFAULT_STOP), reached)
    cache: dict[str, str | None] = {}
    entered, control = journey.sequence, journey.control
    counts = journey.resolutions = dict.fromkeys(RESOLVERS, 0)

    base = sys._getframe()  # noqa: SLF001 - the frame the trace starts from

    def innermost(frame) -> str | None:
        """The module of the innermost repository frame; None while a module is being imported."""
        found = None
        while frame is not None and frame is not base:
            if frame.f_code.co_name == "<module>":  # import time: not the journey
                return None
            if found is None:
                found = module_of(frame.f_code.co_filename, cache)
            frame = frame.f_back
        return found

    def profile(frame, event, arg) -> None:
        nonlocal started
        if not started:
            if event != "call" or f"{module_of(frame.f_code.co_filename, cache)}:{frame.f_code.co_name}" != start:
                return
            started = True
        if event == "call":
            here = frame
        elif event == "return":
            here = frame.f_back
        else:
            return
        m = innermost(here)
        if m is None:
            return
        if not control or control[-1] != m:
            control.append(m)
        if event == "call" and here.f_code.co_name not in INLINE:
            own = module_of(here.f_code.co_filename, cache)
            if own is None:  # a third-party or generated function: control stays in its caller's module
                return
            if not entered or entered[-1] != own:
                entered.append(own)
            key = f"{own}:{here.f_code.co_name}"
            if key in counts:
                counts[key] += 1

    sys.setprofile(profile)
    try:
        cli.main(list(argv))
    except Reached:
        pass
    finally:
        sys.setprofile(None)
        undo()
    return journey


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--start", help="MODULE:FUNCTION where the journey starts (default: the command line)")
    p.add_argument("--stop", help="MODULE:FUNCTION where the journey ends (default: by command, see above)")
    p.add_argument("--sequence", action="store_true", help="also print the sequence, one module a line")
    p.add_argument("bench_args", nargs=argparse.REMAINDER, help="the bench command line")
    args = p.parse_args(argv)
    os.environ.setdefault("BENCH_OFFLINE", "1")
    j = trace(args.bench_args, args.stop, args.start)
    out = j.summary()
    if not args.sequence:
        out.pop("sequence")
    out.pop("control")
    out["resolutions"] = {k: v for k, v in j.resolutions.items() if v}
    print(json.dumps(out))
    if args.sequence:
        print("\n".join(j.sequence), file=sys.stderr)
    return 0 if j.reached else 1


if __name__ == "__main__":
    sys.exit(main())
