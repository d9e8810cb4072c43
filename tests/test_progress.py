"""The progress helper (methods.progress): a tqdm bar on a terminal, newline-terminated lines at most every
LINE_INTERVAL seconds elsewhere (a log, a pipe, CI), nothing with BENCH_PROGRESS=0 or enabled=False. Time comes from
a fake clock, so no test sleeps."""

from __future__ import annotations

import io

import pytest
import tqdm.std

from methods import progress as P


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(tqdm.std, "time", c)  # tqdm reads its clock from here when a bar is made
    monkeypatch.delenv("BENCH_PROGRESS", raising=False)
    return c


def work(bar, clock, steps: int, seconds: float, write_at: int | None = None, out=None) -> None:
    for i in range(steps):
        clock.t += seconds
        bar.update(1)
        bar.set_postfix(loss=f"{1.0 / (i + 1):.3f}")  # refreshes: must not add lines between two intervals
        if i == write_at:
            bar.write("  a cell finished", file=out)
    bar.close()


def test_off_a_terminal_a_line_every_interval_then_a_closing_line(clock):
    out = io.StringIO()
    bar = P.progress_bar(20, "lira references", True, file=out)
    work(bar, clock, 20, 3.0, write_at=6, out=out)  # 60 s in all, a step every 3 s
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text and text.endswith("\n")
    lines = text.splitlines()
    progress = [x for x in lines if x.startswith("lira references:")]
    assert "  a cell finished" in lines
    # the first after 10 s (not at 0%), then at most one per 10 s of the fake clock, and the end
    assert progress[0].startswith("lira references:  20% 4/20 [00:12<")
    assert progress[-1].startswith("lira references: 100% 20/20 [01:00<00:00")
    assert 5 <= len(progress) <= 7
    assert all("loss=" in x for x in progress)


def test_work_shorter_than_the_interval_prints_nothing(clock):
    out = io.StringIO()
    work(P.progress_bar(50, "gcn", True, file=out), clock, 50, 0.1)  # 5 s
    assert out.getvalue() == ""


def test_a_shorter_interval_gives_a_line_per_step(clock, monkeypatch):
    monkeypatch.setattr(P, "LINE_INTERVAL", 0.0)
    out = io.StringIO()
    work(P.progress_bar(3, "sweep", True, file=out), clock, 3, 1.0)
    lines = out.getvalue().splitlines()
    assert [x.split(" [")[0] for x in lines] == ["sweep:   0% 0/3", "sweep:  33% 1/3", "sweep:  67% 2/3",
                                                 "sweep: 100% 3/3"]


def test_an_unknown_total_counts(clock):
    out = io.StringIO()
    work(P.progress_bar(None, "queries", True, file=out), clock, 3, 11.0)
    assert out.getvalue().splitlines()[-1].startswith("queries: 3 [00:33, ")


@pytest.mark.parametrize("env,enabled", [("0", True), (None, False), ("1", False), ("lines", False)])
def test_bench_progress_0_and_no_progress_hide_everything(clock, monkeypatch, env, enabled):
    if env is not None:
        monkeypatch.setenv("BENCH_PROGRESS", env)
    for out in (io.StringIO(), Terminal()):
        assert P.progress_mode(enabled, out) == "off"
        bar = P.progress_bar(10, "x", enabled, file=out)
        work(bar, clock, 10, 5.0, write_at=3, out=out)
        assert out.getvalue() == "  a cell finished\n"  # tqdm.write still writes the caller's own lines


def test_a_terminal_gets_the_redrawn_bar_and_the_environment_can_force_either(clock, monkeypatch):
    tty, log = Terminal(), io.StringIO()
    assert P.progress_mode(True, tty) == "bar" and P.progress_mode(True, log) == "lines"
    bar = P.progress_bar(4, "fit", True, file=tty)
    work(bar, clock, 4, 1.0)
    assert "\r" in tty.getvalue() and "fit" in tty.getvalue()  # tqdm's in-place frames
    monkeypatch.setenv("BENCH_PROGRESS", "1")
    assert P.progress_mode(True, log) == "bar" and P.interactive() is True
    monkeypatch.setenv("BENCH_PROGRESS", "lines")
    assert P.progress_mode(True, tty) == "lines" and P.interactive() is False


def test_a_bar_dropped_by_an_error_prints_no_late_line(clock):
    out = io.StringIO()
    bar = P.progress_bar(10, "x", True, file=out)
    for _ in range(3):
        clock.t += 11
        bar.update(1)
    shown = out.getvalue()
    bar.__del__()  # what garbage collection does after an exception unwound the loop
    assert out.getvalue() == shown and shown.count("\n") == 3


def test_a_method_fit_reports_through_its_context_when_stderr_is_a_log(clock, monkeypatch, capsys):
    """The real consumer: FitContext.bar in a method's training loop writes lines to a non-terminal stderr."""
    from bench.datasets import load_dataset
    from bench.splits import make_task
    from methods.base import Budget, fit_method, get_method

    monkeypatch.setattr(P, "LINE_INTERVAL", 0.0)
    task = make_task(load_dataset("csbm:nodes=60,classes=2"), "random-75-10-15", 0)
    capsys.readouterr()
    fit_method(get_method("mlp")(epochs=3), task, Budget(), 0, progress=True)
    err = capsys.readouterr().err
    assert "\r" not in err and "mlp: 100% 3/3" in err
    fit_method(get_method("mlp")(epochs=3), task, Budget(), 0, progress=False)
    assert capsys.readouterr().err == ""


def test_a_sweeps_cell_lines_come_with_the_count_after_them(clock):
    """bench.sweep.runner's order: tqdm.write a finished cell, then update; the count is never a stale one."""
    out = io.StringIO()
    bar = P.progress_bar(3, "sweep", True, file=out)
    for i in range(3):
        clock.t += 15
        bar.write(f"  finished cell {i}", file=out)
        bar.update(1)
    bar.close()
    assert [x.split(" [")[0] for x in out.getvalue().splitlines()] == [
        "  finished cell 0", "sweep:  33% 1/3", "  finished cell 1", "sweep:  67% 2/3", "  finished cell 2",
        "sweep: 100% 3/3"]
