"""``bench sweep --executor ray`` on a real local Ray cluster: a head and two worker nodes
(:class:`ray.cluster_utils.Cluster`, each worker node with one CPU and one declared GPU). The Ray worker process
running one cell is SIGKILLed mid-cell: Ray retries the cell, it finishes exactly once, the dead attempt's run
ends KILLED, nothing stays RUNNING, every cell asked Ray for ``--gpus-per-cell`` GPUs, and the results equal an
in-process sweep of the same cells. The cluster is torn down even when the test fails, and leaves no process.

Without Ray the module skips, unless ``BENCH_REQUIRE_RAY=1`` (tox's ``tests`` environment, i.e. CI), where a
missing Ray fails.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import tempfile
import threading
from collections import Counter

import pytest
import yaml

from bench import tracking

CSBM = "csbm:nodes=200,classes=3,features=8"
REQUIRE_RAY = os.environ.get("BENCH_REQUIRE_RAY") == "1"

VICTIM_PLUGIN = '''
import os
import time
from pathlib import Path

from methods import register
from methods.baselines import MLPMethod

CONTROL = Path({control!r})


@register("ray-victim")
class RayVictim(MLPMethod):
    """mlp that logs each fit (pid, GPUs Ray assigned); the first fit that finds CONTROL/armed waits to be killed"""
    description = "mlp; an armed fit waits to be killed (tests)"

    def fit(self, *a, **k):
        gpus = "-"
        try:
            import ray

            if ray.is_initialized():
                gpus = ray.get_runtime_context().get_assigned_resources().get("GPU", 0)
        except ImportError:
            pass
        with open(CONTROL / "fits.log", "a") as f:
            f.write(f"{{os.getpid()}} {{gpus}}\\n")
        try:
            os.rename(CONTROL / "armed", CONTROL / "taken")  # atomic: one fit takes the flag
        except FileNotFoundError:
            return super().fit(*a, **k)
        (CONTROL / "victim.tmp").write_text(str(os.getpid()))
        os.rename(CONTROL / "victim.tmp", CONTROL / "victim.pid")
        time.sleep(300)
        raise RuntimeError("the armed fit was not killed")
'''


def _ray():
    try:
        import ray
    except ModuleNotFoundError:
        if REQUIRE_RAY:
            pytest.fail("BENCH_REQUIRE_RAY=1 but Ray is not installed: pip install -e '.[ray]' -c constraints/cpu.txt")
        pytest.skip("Ray is not installed (pip install -e '.[ray]'); with BENCH_REQUIRE_RAY=1 this fails instead")
    return ray


@pytest.fixture
def cluster(monkeypatch):
    """A head node (no CPU: it schedules nothing) and two worker nodes with one CPU and one declared GPU each,
    their session files in a short temporary folder (``RAY_TMPDIR``, not ``/tmp/ray``); shut down on exit, and no
    process of it may outlive that."""
    _ray()
    from ray.cluster_utils import Cluster

    import psutil  # Ray ships psutil (on sys.path once ray is imported)

    # short whatever TMPDIR is: Ray's Unix sockets live under it, and AF_UNIX paths stop at 107 bytes
    temp = tempfile.mkdtemp(prefix="bray-", dir="/tmp" if os.path.isdir("/tmp") else None)
    monkeypatch.setenv("RAY_TMPDIR", temp)
    me = psutil.Process()
    spawned: dict[int, psutil.Process] = {}

    def remember() -> None:
        for p in me.children(recursive=True):
            spawned.setdefault(p.pid, p)

    node = {"object_store_memory": 80 * 1024 * 1024}
    c = Cluster(initialize_head=True, head_node_args={**node, "num_cpus": 0, "include_dashboard": False})
    try:
        for _ in range(2):
            c.add_node(**node, num_cpus=1, num_gpus=1)
        c.wait_for_nodes()
        c.remember = remember
        yield c
    finally:
        remember()
        c.shutdown()
        # Ray's workers exit on their own after shutdown, slowly on a loaded machine (one was still running after a
        # minute): whatever is left after 10 s is killed (never a stray Ray process, even when an assertion
        # failed); one that survives even SIGKILL fails the test. A zombie has exited: only its parent (init, once
        # a Ray process died) has not reaped it yet.
        _, alive = psutil.wait_procs(list(spawned.values()), timeout=10)
        for p in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        _, stuck = psutil.wait_procs(alive, timeout=10)
        stuck = [p for p in stuck if _running(p, psutil)]
        import shutil

        shutil.rmtree(temp, ignore_errors=True)
        assert not stuck, f"Ray processes outlived the cluster and SIGKILL: {[p.pid for p in stuck]}"


def _running(p, psutil) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def by_cell(experiment):
    """{cell id: Counter(status)} over the top-level runs of the experiment."""
    out: dict[str, Counter] = {}
    for r in tracking.search_runs(experiment):
        if not r.data.tags.get("mlflow.parentRunId"):
            out.setdefault(r.data.tags.get("sweep_cell"), Counter())[r.info.status] += 1
    return out


def results(experiment):
    """{cell id: the FINISHED run's metrics that do not measure time}."""
    out = {}
    for r in tracking.search_runs(experiment, "attributes.status = 'FINISHED'"):
        if not r.data.tags.get("mlflow.parentRunId"):
            out[r.data.tags["sweep_cell"]] = {k: v for k, v in r.data.metrics.items()
                                              if "second" not in k and "time" not in k}
    return out


def test_a_worker_killed_mid_cell_is_retried_by_ray_and_the_cell_finishes_once(cluster, tmp_path, monkeypatch):
    from bench import api, plugins

    control = tmp_path / "control"
    control.mkdir()
    plugin = tmp_path / "victim_plugin.py"
    plugin.write_text(VICTIM_PLUGIN.format(control=str(control)))
    conf = {"experiment": "sweep-ray", "datasets": [CSBM], "seeds": [0, 1], "epsilons": [4], "set": {"epochs": 5},
            "device": "cpu", "methods": ["ray-victim", {"name": "dp-mlp", "seeds": [0]}]}
    monkeypatch.setattr(plugins, "_loaded", [])  # what this test loads is not passed to later sweeps' workers
    plugins.load_plugin(str(plugin))  # as `bench --plugin`: Ray workers load it too (BENCH_PLUGINS)

    # the reference: the same cells in this process (nothing armed)
    ref = api.sweep(conf, experiment="sweep-ray-ref", threads=1)
    assert [r["status"] for r in ref["results"]] == ["finished"] * 3
    reference_fits = len((control / "fits.log").read_text().splitlines())

    victim: list[int] = []

    swept = threading.Event()

    def kill_the_armed_cell() -> None:
        # no deadline but the sweep's end: on a loaded machine Ray's workers can take minutes to reach the flag
        while not (control / "victim.pid").exists():
            if swept.wait(0.1):
                return
        victim.append(int((control / "victim.pid").read_text()))
        victim.append(len(tracking.search_runs("sweep-ray", "attributes.status = 'RUNNING'")))
        cluster.remember()
        os.kill(victim[0], signal.SIGKILL)  # the Ray worker process, mid-cell

    (control / "armed").touch()
    killer = threading.Thread(target=kill_the_armed_cell, daemon=True)
    killer.start()
    try:
        s = api.sweep(conf, executor="ray", address=cluster.address, workers=2, gpus_per_cell=1, threads=1)
    finally:
        swept.set()
    killer.join(timeout=5)
    assert victim, "no cell took the flag"
    assert victim[1] >= 1, "the armed cell had no open run when it was killed"
    assert [r["status"] for r in s["results"]] == ["finished"] * 3, s["results"]

    counts = by_cell("sweep-ray")
    assert len(counts) == 3
    killed = [cid for cid, c in counts.items() if c["KILLED"]]
    assert len(killed) == 1 and counts[killed[0]] == Counter(FINISHED=1, KILLED=1)  # ran twice, finished once
    assert all(c == Counter(FINISHED=1) for cid, c in counts.items() if cid not in killed)
    assert not tracking.search_runs("sweep-ray", "attributes.status = 'RUNNING'")  # no child run either
    (dead,) = tracking.search_runs("sweep-ray", "attributes.status = 'KILLED'")
    assert "worker that ran it died" in dead.data.tags["error"]

    fits = [line.split() for line in (control / "fits.log").read_text().splitlines()[reference_fits:]]
    assert len(fits) == 3  # two ray-victim cells, one of them twice
    assert [int(pid) for pid, _ in fits].count(victim[0]) == 1 and os.getpid() not in {int(p) for p, _ in fits}
    assert all(math.isclose(float(gpus), 1.0) for _, gpus in fits)  # --gpus-per-cell reached Ray's scheduler

    ref_results, ray_results = results("sweep-ray-ref"), results("sweep-ray")
    assert set(ref_results) == set(ray_results) == set(counts)
    for cid, metrics in ref_results.items():
        assert metrics and ray_results[cid] == pytest.approx(metrics, rel=1e-9, abs=1e-12), cid


def test_gpus_per_cell_is_a_ray_option(tmp_path, capsys):
    """``--gpus-per-cell`` reaches :func:`bench.api.sweep` and is refused without Ray or below 0 (no run opened)."""
    from bench.cli import main

    conf = tmp_path / "c.yaml"
    conf.write_text(yaml.safe_dump({"datasets": [CSBM], "methods": ["mlp"]}))
    for extra in (["--gpus-per-cell", "1"], ["--executor", "ray", "--gpus-per-cell", "-1"]):
        capsys.readouterr()
        assert main(["sweep", str(conf), *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and "--gpus-per-cell" in err, err
