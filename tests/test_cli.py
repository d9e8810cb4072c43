import json
import signal
import subprocess
import sys
import time

import pytest

from bench.cli import main
from bench import tracking
from tests.conftest import REPO, bench_env

PLUGIN = str(REPO / "tests" / "plugins" / "example_plugin.py")
FAULTY = str(REPO / "tests" / "plugins" / "faulty.py")
CSBM = "csbm:nodes=150,classes=3,features=8"


def run_cli(args, **env):
    return subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True,
                          env=bench_env(env), cwd=REPO, timeout=300)


def runs(experiment):
    return tracking.search_runs(experiment)


def test_help_lists_the_commands():
    r = run_cli(["--help"])
    assert r.returncode == 0
    for cmd in ("run", "list", "account"):
        assert f"    {cmd} " in r.stdout


def test_list_shows_every_method_with_its_unit_and_datasets(capsys):
    from methods import available_methods

    assert main(["list", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    listed = {m["name"]: m["privacy_unit"] for m in out["methods"]}
    assert listed == {n: c.privacy_unit for n, c in available_methods().items()}
    names = {d["name"] for d in out["datasets"]}
    assert {"cora", "citeseer", "pubmed", "computers", "photo", "cs", "physics", "ogbn-arxiv", "ogbn-products",
            "csbm", "facebook-<school>"} <= names
    assert {s["name"] for s in out["splits"]} == {"public", "random-75-10-15", "ogb", "disjoint", "private-public"}


def test_run_is_tracked_with_params_metrics_and_artifacts(tmp_path, capsys):
    exp = "cli-tracked"
    out = tmp_path / "res.json"
    code = main(["run", "-m", "mlp,gcn", "-d", CSBM, "--seeds", "0", "1", "--set", "epochs=15", "--set",
                 "gcn.hidden=8", "--experiment", exp, "--no-progress", "-o", str(out)])
    assert code == 0
    table = capsys.readouterr().out
    assert "test acc" in table and "gcn" in table and "± " in table
    rs = runs(exp)
    assert len(rs) == 4 and all(r.info.status == "FINISHED" for r in rs)
    gcn = [r for r in rs if r.data.params["method"] == "gcn"]
    p = gcn[0].data.params
    assert p["hp.hidden"] == "8" and p["hp.epochs"] == "15" and p["split"] == "random-75-10-15"
    assert len(p["split_hash"]) == 16 and len(p["config_hash"]) == 16
    assert gcn[0].data.tags["git_commit"]
    m = gcn[0].data.metrics
    assert 0 <= m["test_acc"] <= 1 and "test_macro_f1" in m and m["epsilon"] > 1e300
    hist = tracking.client().get_metric_history(gcn[0].info.run_id, "diagnostic.train_loss")
    assert sorted(h.step for h in hist) == list(range(1, 16))
    # numbers no ledger covers are diagnostics: namespaced, tagged, and kept out of the released output
    assert "train_acc" not in m and "val_acc" not in m and "diagnostic.train_acc" in m
    assert "not released" in gcn[0].data.tags["diagnostics"]
    arts = {a.path for a in tracking.client().list_artifacts(gcn[0].info.run_id)}
    assert {"config.json", "ledger.json"} <= arts
    results = json.loads(out.read_text())
    assert len(results) == 4 and {r["method"] for r in results} == {"mlp", "gcn"}
    assert all("diagnostics" not in r and not any(k.startswith("diagnostic") for k in r["metrics"]) for r in results)
    # the two seeds of a method are different runs with different splits
    assert gcn[0].data.params["split_hash"] != gcn[1].data.params["split_hash"]


BAD = [
    (["run", "-m", "nope", "-d", "cora"], "unknown method 'nope'"),
    (["run", "-m", "gcn", "-d", "coraa"], "unknown dataset 'coraa'"),
    (["run", "-m", "gcn", "-d", CSBM, "-e", "0"], "epsilon must be > 0"),
    (["run", "-m", "gcn", "-d", CSBM, "-e", "-1"], "epsilon must be > 0"),
    (["run", "-m", "gcn", "-d", CSBM, "-e", "1", "--delta", "1"], "delta must be in [0, 1)"),
    (["run", "-m", "gcn", "-d", CSBM, "--delta", "1.5"], "delta must be in [0, 1)"),
    (["run", "-m", "gcn", "-d", CSBM, "-e", "2"], "not private"),
    (["run", "-m", "gcn", "-d", "cora", "--data-root", "/nonexistent/x"], "does not exist"),
    (["run", "-m", "gcn", "-d", "computers", "-s", "public"], "only for cora"),
    (["run", "-m", "gcn", "-d", CSBM, "-s", "halves"], "unknown split"),
    (["run", "-m", "gcn", "-d", CSBM, "--set", "hiden=3"], "unknown hyperparameter 'hiden'"),
    (["run", "-m", "gcn", "-d", CSBM, "--set", "hidden=abc"], "must be an integer"),
    (["run", "-m", "gcn", "-d", CSBM, "--set", "dropout=1.5"], "dropout"),
    (["run", "-m", "gcn", "-d", CSBM, "--set", "mlp.hidden=3"], "not one of the methods"),
    (["run", "-m", "gcn", "-d", CSBM, "--seeds", "-1"], "non-negative"),
    (["run", "-m", "gcn", "-d", "csbm:nodes=6,classes=2"], "val set empty"),
    (["run", "-m", "gcn", "-d", "csbm:homophily=2"], "homophily"),
    (["--plugin", "/nonexistent/plugin.py", "list"], "plugin file"),
]


@pytest.mark.parametrize("args,message", BAD, ids=[m for _, m in BAD])
def test_bad_input_is_one_clear_line_and_leaves_nothing(args, message, tmp_path, capsys):
    exp = "cli-bad-input"
    before = len(runs(exp))
    out = tmp_path / "out.json"
    extra = ["--experiment", exp, "-o", str(out)] if args[0] == "run" else []
    code = main([*args, *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("error: ") and message in err[-1]
    assert not out.exists()
    assert len(runs(exp)) == before


def test_missing_dataset_files_name_them(tmp_path, capsys):
    assert main(["run", "-m", "gcn", "-d", "cora", "--data-root", str(tmp_path), "--no-track"]) == 2
    err = capsys.readouterr().err
    assert "Cora/raw/ind.cora.x" in err and str(tmp_path) in err


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="CUDA present")
def test_cuda_without_a_gpu_is_a_clear_error(capsys):
    assert main(["run", "-m", "gcn", "-d", CSBM, "--device", "cuda", "--no-track"]) == 2
    assert "no CUDA device" in capsys.readouterr().err


def test_plugin_methods_work_in_every_command(tmp_path):
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    r = run_cli(["--plugin", PLUGIN, "list", "methods"], MLFLOW_TRACKING_URI=uri)
    assert r.returncode == 0 and "centroid" in r.stdout
    r = run_cli(["--plugin", PLUGIN, "run", "-m", "centroid,mlp", "-d", CSBM, "--set", "temperature=0.5",
                 "--set", "epochs=5", "--no-progress"], MLFLOW_TRACKING_URI=uri)
    assert r.returncode == 0, r.stderr
    assert "centroid" in r.stdout
    r = run_cli(["run", "-m", "centroid", "-d", CSBM], MLFLOW_TRACKING_URI=uri)
    assert r.returncode == 2 and "unknown method 'centroid'" in r.stderr


def _statuses(uri, exp="dp-gnn-bench"):
    from mlflow.tracking import MlflowClient

    c = MlflowClient(uri)
    e = c.get_experiment_by_name(exp)
    return [(r.info.status, r.data.tags.get("error", "")) for r in c.search_runs([e.experiment_id])]


def test_a_crashing_run_is_marked_failed_with_its_error(tmp_path):
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    r = run_cli(["--plugin", FAULTY, "run", "-m", "crash", "-d", CSBM], MLFLOW_TRACKING_URI=uri)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1].startswith("error: RuntimeError: boom inside fit")
    assert "Traceback" not in r.stderr
    assert _statuses(uri) == [("FAILED", "RuntimeError: boom inside fit")]


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_leaves_no_run_running(tmp_path, sig, code):
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    marker = tmp_path / "started"
    # like a terminal: a child of a non-interactive shell's background job inherits an ignored SIGINT,
    # and Python then never raises KeyboardInterrupt, so restore the default disposition first
    proc = subprocess.Popen([sys.executable, "-m", "bench", "--plugin", FAULTY, "run", "-m", "sleepy", "-d", CSBM],
                            env=bench_env({"MLFLOW_TRACKING_URI": uri, "SLEEPY_MARKER": str(marker)}), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline
        time.sleep(0.2)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert [s for s, _ in _statuses(uri)] == ["KILLED"]


# --------------------------------------------------------------------------------------
# Where a failure happens decides the exit status
# --------------------------------------------------------------------------------------

IN_FIT = '''
from methods import Method, register
from methods.base import BudgetError, Fitted


@register("refuses-in-fit")
class RefusesInFit(Method):
    """raises a BenchError inside fit, after the run opened, as calibrate_noise does for an unreachable target"""
    privacy_unit = "node"
    description = "raises a BudgetError inside _fit (tests)"

    def _fit(self, ctx):
        raise BudgetError("epsilon=1 does not allow a single step")


@register("wrong-shape")
class WrongShape(Method):
    """returns probabilities of the wrong shape: a contract violation"""
    description = "bad output (tests)"

    def _fit(self, ctx):
        import torch
        from methods.privacy import PrivacyLedger

        class Out(Fitted):
            ledger = PrivacyLedger.non_private("test")
            history, info = [], {}

            def predict_proba(self, nodes=None):
                return torch.full((3, 2), 0.5)

        return Out()
'''


@pytest.fixture(scope="module")
def in_fit_plugin(tmp_path_factory):
    path = tmp_path_factory.mktemp("plugins") / "in_fit.py"
    path.write_text(IN_FIT)
    yield str(path)
    from methods.base import unregister

    unregister("refuses-in-fit")
    unregister("wrong-shape")


@pytest.mark.parametrize("method,args,message", [
    ("refuses-in-fit", ["-e", "1"], "error: BudgetError: epsilon=1 does not allow a single step"),
    ("wrong-shape", [], "error: ContractViolation: wrong-shape.predict_proba returned shape (3, 2)"),
])
def test_a_failure_inside_a_run_exits_1_and_the_run_is_failed(in_fit_plugin, method, args, message, capsys):
    exp = f"cli-in-run-{method}"
    code = main(["--plugin", in_fit_plugin, "run", "-m", method, "-d", CSBM, *args, "--experiment", exp,
                 "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and err[-1].startswith(message), err
    (run,) = runs(exp)
    assert run.info.status == "FAILED" and run.data.tags["error"].startswith(message[len("error: "):])


@pytest.mark.parametrize("argv", [
    ["run", "-m", "dp-mlp", "-d", CSBM, "-e", "1", "--delta", "0"],
    ["attack", "-m", "dp-mlp", "-d", CSBM, "-e", "1", "--delta", "0", "-a", "threshold"],
    ["audit", "-m", "dp-mlp", "-d", CSBM, "-e", "1", "--delta", "0"],
], ids=["run", "attack", "audit"])
def test_delta_zero_with_a_finite_epsilon_is_rejected_before_any_run(argv, capsys):
    exp = "cli-delta-zero"
    assert main([*argv, "--experiment", exp, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and "delta = 0" in err[-1]
    assert runs(exp) == []


def test_a_sweep_config_with_delta_zero_is_rejected(tmp_path, capsys):
    conf = tmp_path / "d0.yaml"
    conf.write_text(f"datasets: ['{CSBM}']\nepsilons: [1]\ndelta: 0\nmethods: [dp-mlp]\n")
    assert main(["sweep", str(conf)]) == 2
    assert "delta = 0" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["run", "-m", "gcn", "-d", CSBM],
    ["attack", "-m", "gcn", "-d", CSBM, "-a", "threshold"],
    ["audit", "-m", "dp-mlp", "-d", CSBM, "-e", "1"],
], ids=["run", "attack", "audit"])
def test_an_unwritable_output_is_rejected_before_training(argv, tmp_path, capsys):
    exp = "cli-unwritable"
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for out, message in ((blocker / "res.json", "cannot write in"), (tmp_path, "is a directory")):
        assert main([*argv, "--experiment", exp, "--no-progress", "-o", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("error: --output") and message in err[-1]
    assert runs(exp) == []


def test_an_unwritable_sweep_summary_is_rejected_before_any_cell(tmp_path, capsys):
    conf = tmp_path / "s.yaml"
    conf.write_text(f"experiment: cli-unwritable-sweep\ndatasets: ['{CSBM}']\nmethods: [mlp]\n")
    assert main(["sweep", str(conf), "-o", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert runs("cli-unwritable-sweep") == []


# --------------------------------------------------------------------------------------
# Parsing: negative numbers, --threads, bench list METHOD
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv,message", [
    (["run", "-m", "dp-mlp", "-d", CSBM, "-e", "1", "--delta=-1e-5"], "delta must be in [0, 1) (got -1e-05)"),
    (["run", "-m", "dp-mlp", "-d", CSBM, "-e", "1", "--delta", "-1e-5"], "delta must be in [0, 1) (got -1e-05)"),
    (["run", "-m", "dp-mlp", "-d", CSBM, "--epsilon=-inf"], "epsilon must be > 0"),
    (["audit", "-m", "dp-mlp", "-d", CSBM, "-e", "1", "--delta=-1e-5"], "delta must be in [0, 1)"),
    (["account", "dpsgd", "--sampling", "poisson", "--sampling-rate", "0.01", "--noise-multiplier", "1", "--steps",
      "10", "--delta=-1e-5"], "delta must be in (0, 1) (got -1e-05)"),
    (["account", "dpsgd", "--sampling", "poisson", "--sampling-rate", "0.01", "--noise-multiplier", "1", "--steps",
      "10", "--delta", "-1e-5"], "delta must be in (0, 1) (got -1e-05)"),
])
def test_negative_numbers_parse_then_get_the_usual_error(argv, message, capsys):
    assert main([*argv, *(["--no-track"] if argv[0] != "account" else [])]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err


@pytest.mark.parametrize("argv", [["run", "-m", "mlp", "-d", CSBM, "--set", "epochs=2"],
                                  ["attack", "-m", "mlp", "-d", CSBM, "--set", "epochs=2", "-a", "threshold",
                                   "--bootstrap", "0"],
                                  ["audit", "-m", "mlp", "-d", CSBM]], ids=["run", "attack", "audit"])
def test_threads_on_every_command_that_trains(argv, capsys):
    import numba
    import torch

    # numba first: its first call launches its threading layer, which may reset OpenMP's count (torch's) in a fresh
    # process, and the count to compare with is the one the command finds
    numba_threads = numba.get_num_threads()
    before = torch.get_num_threads(), numba_threads
    assert main([*argv, "--threads", "1", "--no-track", "--no-progress"]) == 0
    assert (torch.get_num_threads(), numba.get_num_threads()) == before  # set for the command, then restored
    assert main([*argv, "--threads", "-1", "--no-track", "--no-progress"]) == 2
    assert "--threads must be >= 0" in capsys.readouterr().err


def test_list_a_method_shows_its_hyperparameters(capsys):
    assert main(["list", "gcn"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("gcn (method, privacy unit: none)")
    line = next(x for x in out.splitlines() if x.split()[:3] == ["patience", "int", "50"])
    assert "epochs without validation improvement" in line
    assert any(x.split()[:3] == ["features", "auto|row|none", "auto"] for x in out.splitlines())
    assert main(["list", "dp-mlp", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    clip = next(o for o in info["options"] if o["name"] == "clip")
    assert clip == {"name": "clip", "type": "float", "default": "1.0",
                    "help": "per-example gradient norm bound C (fixed: a data-derived C would leak)"}
    assert main(["list", "lira"]) == 0 and "references" in capsys.readouterr().out
    assert main(["list", "nope"]) == 2
    assert "unknown method 'nope'" in capsys.readouterr().err


def test_a_reader_closing_the_pipe_is_a_quiet_exit_141():
    """`bench list | head -1`: the reader leaves before bench writes; no 'error:' line, the shell's SIGPIPE status."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "bench", "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # before bench has imported anything, let alone written
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 141 and b"error" not in err, err.decode()
