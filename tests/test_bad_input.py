"""Bad input before work, for every command: one table of (command line, message) cases.

Each case must exit 2 with exactly one ``error:`` line (the last one on stderr, naming the problem), print nothing
on stdout, open no MLflow run in any experiment and leave nothing behind (no output file, no folder created).
The rule for output paths (``bench.io``): an output file's folder must already exist and be writable (proven
with a probe file, so ``/proc`` fails too); an output folder may be new, its parent may not; an input that is
missing is ``not found``. :func:`test_every_command_has_cases` fails for a command (or an ``account`` form or a
``perf`` benchmark) that has no case here.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pytest

from bench import tracking
from bench.cli import build_parser, command_index, main

D = "csbm:nodes=60,classes=2"
LINUX_PROC = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
DPSGD = ["account", "dpsgd", "--sampling", "poisson", "--sampling-rate", "0.01", "--noise-multiplier", "1",
         "--steps", "10", "--delta", "1e-5"]
MINI = str(Path(__file__).parent / "data" / "conformance_mini.json")  # the conformance tool's test corpus
PROGAP_NODE = ["account", "progap", "--level", "node", "--depth", "2", "--num-train", "100", "--batch-size", "10",
               "--steps-per-stage", "5", "--max-degree", "3", "--noise-multiplier", "1", "--delta", "1e-5"]


def given(argv: list[str], option: str, value: str) -> list[str]:
    """``argv`` with ``option``'s value replaced by ``value`` (appended when absent)."""
    if option not in argv:
        return [*argv, option, value]
    i = argv.index(option)
    return [*argv[:i + 1], value, *argv[i + 2:]]


def case(argv: str | list[str], message: str, *marks) -> pytest.param:
    """One bad command line (``{tmp}``: this test's folder, with ``blocker`` a file, ``fifo`` a named pipe,
    ``ok.yaml`` a valid sweep config and ``folder/`` an empty folder; ``missing/`` never exists)."""
    args = argv.split() if isinstance(argv, str) else argv
    return pytest.param(args, message, marks=marks, id=" ".join(args).replace("{tmp}/", "")[:90])


CASES = [
    # --- bench run -------------------------------------------------------------------------------------------
    case("run -m nope -d " + D, "unknown method 'nope'"),
    case("run -m , -d " + D, "no method given"),
    case("run -m mlp -d coraa", "unknown dataset 'coraa'"),
    case("verify -m dp-mlp -d CORAA -e 1", "unknown dataset 'CORAA'"),
    case("run -m mlp -d csbm:nodez=5", "bad option"),
    case("run -m mlp -d csbm:nodes=6,classes=2", "val set empty"),
    case(f"run -m mlp -d {D} -s halves", "unknown split 'halves'"),
    case(f"run -m dp-mlp -d {D} -e 0", "epsilon must be > 0"),
    case(f"run -m dp-mlp -d {D} -e nan", "epsilon must be > 0"),
    case(f"run -m dp-mlp -d {D} -e 1 --delta 1.5", "delta must be in [0, 1)"),
    case(f"run -m dp-mlp -d {D} -e 1 --delta 0", "delta = 0"),
    case(f"run -m mlp -d {D} -e 2", "not private"),
    case(f"run -m dp-mlp -d {D} -e 1 --set lr=inf", "dp-mlp.lr must be a finite number (got 'inf')"),
    case(f"run -m dp-mlp -d {D} -e 1 --set lr=nan", "dp-mlp.lr must be a finite number (got 'nan')"),
    case(f"run -m mlp -d {D} --bootstrap -5", "--bootstrap must be >= 0 and at most 100000"),
    case(f"attack -m mlp -d {D} -a threshold --bootstrap 1000000", "--bootstrap must be >= 0 and at most 100000"),
    case(f"attack -m mlp -d {D} --attack lira --attack-set references=1000000", "references must be in [2, 1024]"),
    case(f"run -m mlp -d {D} --set hiden=3", "unknown hyperparameter 'hiden'"),
    case(f"run -m mlp -d {D} --set hidden=abc", "must be an integer"),
    case(f"run -m mlp -d {D} --set noequals", "--set expects key=value"),
    case(f"run -m mlp -d {D} --seeds 0 0", "seeds must be distinct non-negative integers"),
    case(f"run -m mlp -d {D} --seeds -1", "a seed must be a non-negative integer (got -1)"),
    case(f"run -m mlp -d {D} --seeds 0 -1", "seeds must be distinct non-negative integers"),
    case(f"run -m mlp -d {D} --device gpu", "unknown device 'gpu'"),
    case(f"run -m mlp -d {D} --threads -1", "--threads must be >= 0"),
    case(f"run -m mlp -d {D} --threads 99999999999999999999", "--threads must be >= 0 and at most 1024"),
    case(f"run -m mlp -d {D} --set hidden=99999999999999999999", "mlp.hidden must be an integer of at most 2^63 - 1"),
    case(f"run -m gcn -d {D} --set hidden=1000000000000", "method gcn needs at least"),
    case("run -m gcn -d csbm:nodes=99999999999999", "csbm:nodes=99999999999999,features=32,degree=10 needs at least"),
    case(["run", "-m", "mlp", "-d", D, "--experiment", ""], "--experiment must be a non-empty name"),
    case(f"run -m mlp -d {D} --data-root {{tmp}}/missing", "--data-root {tmp}/missing does not exist"),
    case(f"run -m mlp -d {D} --data-root {{tmp}}/blocker", "is not a folder"),
    case(f"run -m mlp -d {D} -o {{tmp}}/missing/out.json", "cannot write in {tmp}/missing (no such folder; "
                                                           "create it first)"),
    case(f"run -m mlp -d {D} -o /proc/x/out.json", "cannot write in /proc/x (no such folder", LINUX_PROC),
    case(f"run -m mlp -d {D} -o /proc/out.json", "cannot write in /proc (cannot create a file there", LINUX_PROC),
    case(f"run -m mlp -d {D} -o {{tmp}}/folder", "is a directory; give a file name"),
    case(f"run -m mlp -d {D} -o {{tmp}}/blocker/out.json", "cannot write in {tmp}/blocker (not a folder)"),
    case(f"run -m mlp -d {D} -o {{tmp}}/fifo", "is not a regular file"),
    case(f"run -m mlp -d {D} --plot-dir {{tmp}}/plots", "--plot-dir saves the attacks' ROC plots: give --attacks"),
    case(f"run -m mlp -d {D} --attacks nope", "unknown attack 'nope'"),
    case(f"run -m mlp -d {D} --attack-set references=4", "no attack given"),
    case(f"run -m mlp -d {D} --attacks threshold --bootstrap -1", "--bootstrap must be >= 0"),
    case(f"run -m mlp -d {D} --attacks threshold --plot-dir {{tmp}}/missing/plots",
         "--plot-dir {tmp}/missing/plots: cannot write in {tmp}/missing (no such folder"),
    # --- bench attack ----------------------------------------------------------------------------------------
    case(f"attack -m nope -d {D} -a threshold", "unknown method 'nope'"),
    case(f"attack -m mlp -d {D} -a nope", "unknown attack 'nope'"),
    case(f"attack -m mlp -d {D} -a ,", "no attack given"),
    case(f"attack -m mlp -d {D} -a threshold,threshold", "listed twice"),
    case(f"attack -m mlp -d {D} -a threshold --attack-set threshold.nope=1", "unknown attack option 'nope'"),
    case(f"attack -m mlp -d {D} -a threshold --attack-set known_fraction=2", "known_fraction must be in"),
    case(f"attack -m mlp -d {D} -a threshold --bootstrap -5", "--bootstrap must be >= 0"),
    case(f"attack -m mlp -d {D} -a threshold --plot-dir {{tmp}}/blocker", "--plot-dir {tmp}/blocker is not a folder"),
    case(f"attack -m mlp -d {D} -a threshold --plot-dir /proc/plots", "cannot create a file there", LINUX_PROC),
    case(f"attack -m mlp -d {D} -a threshold -o {{tmp}}/missing/a.json", "no such folder; create it first"),
    case(f"attack -m dp-mlp -d {D} -a threshold -e -1", "epsilon must be > 0"),
    # --- bench audit -----------------------------------------------------------------------------------------
    case(f"audit -m nope -d {D}", "unknown method 'nope'"),
    case("audit -m mlp -d nope", "unknown dataset 'nope'"),
    case(f"audit -m mlp -d {D} -s nope", "unknown split 'nope'"),
    case(f"audit -m dp-mlp -d {D} -e 0", "epsilon must be > 0"),
    case(f"audit -m dp-mlp -d {D} -e 1 --delta 1", "delta must be in [0, 1)"),
    case(f"audit -m dp-mlp -d {D} -e 1 --delta 0", "delta = 0"),
    case(f"audit -m dp-mlp -d {D}", "give --epsilon"),
    case(f"audit -m mlp -d {D} --mode multi-run --trials 1", "--trials must be >= 2"),
    case(f"audit -m mlp -d {D} --canaries 1", "--canaries must be >= 2"),
    case(f"audit -m mlp -d {D} --confidence 1", "--confidence must be in (0, 1)"),
    case(f"audit -m mlp -d {D} --hops -1", "--hops and --canary-degree must be >= 0"),
    case(f"audit -m mlp -d {D} --canary-scale 0", "--canary-scale must be > 0"),
    case(f"audit -m mlp -d {D} --seed -1", "a seed must be a non-negative integer (got -1)"),
    case(f"audit -m mlp -d {D} --canary-type gradient", "gradient canaries need a DP-SGD method"),
    case(f"audit -m dp-mlp -d {D} -e 1 --canary-type gradient --canary-pattern random", "dedicated"),
    case(f"audit -m mlp -d {D} --set nope=1", "unknown hyperparameter 'nope'"),
    case(f"audit -m dp-mlp -d {D} -e 1 --mode pooled", "--mode pooled needs white-box gradient canaries"),
    case(f"audit -m dp-mlp -d {D} -e 1 --level whitebox --trials 0", "--trials (runs) must be >= 1"),
    case(f"audit -m dp-mlp -d {D} -e 1 --level whitebox --canaries 3", "--canaries must be >= 4"),
    case(f"audit -m mlp -d {D} --threads -1", "--threads must be >= 0"),
    case(f"audit -m mlp -d {D} --device tpu", "unknown device 'tpu'"),
    case(f"audit -m mlp -d {D} --data-root {{tmp}}/missing", "--data-root {tmp}/missing does not exist"),
    case(f"audit -m mlp -d {D} -o {{tmp}}/missing/a.json", "cannot write in {tmp}/missing (no such folder"),
    case(f"audit -m mlp -d {D} -o /proc/x/a.json", "cannot write in /proc/x", LINUX_PROC),
    case(f"audit -d {D}", "--method is required"),
    case(f"audit -m mlp -d {D} --mechanism nap-edge", "--mechanism and --mutation need --level mechanism"),
    case(f"audit -m mlp -d {D} --level blackbox --canary-type gradient", "contradicts --canary-type gradient"),
    case("audit --level mechanism --mechanism nope", "unknown mechanism nope"),
    case("audit --level mechanism --workers 0", "--workers must be a positive integer"),
    case(f"audit -m mlp -d {D} --workers 2", "--workers needs --level mechanism or the pooled white-box mode"),
    case("audit --level mechanism -m mlp", "drop --method"),
    case("audit --level mechanism -e 0", "epsilon must be a positive finite number"),
    case("audit --level mechanism --delta 1", "delta must be in (0, 1)"),
    case("audit --level mechanism --trials 5", "trials must be an integer >= 100"),
    case("audit --level mechanism --seed -1", "--seed must be >= 0"),
    case("audit --level mechanism --confidence 1", "confidence must be in (0, 1)"),
    case("audit --level mechanism --mutation noise", "expected noise=F"),
    case("audit --level mechanism --mutation noise=0", "mutation noise must be a positive finite number"),
    case("audit --level mechanism --mechanism nap-edge --mutation rate=2", "cannot apply a rate mutation"),
    case("audit --level mechanism -o {tmp}/missing/a.json", "cannot write in {tmp}/missing (no such folder"),
    # --- bench verify ----------------------------------------------------------------------------------------
    case(f"verify -m nope -d {D} -e 1", "unknown method 'nope'"),
    case(f"verify -m mlp -d {D} -e 1", "not private"),
    case(f"verify -m dp-mlp -d {D} -e inf", "give a finite --epsilon"),
    case(f"verify -m dp-mlp -d {D}", "give a finite --epsilon"),
    case(f"verify -m dp-mlp -d {D} -e 1 --delta 2", "delta must be in [0, 1)"),
    case(f"verify -m dp-mlp -d {D} -e 1 --canaries 1", "canaries must be >= 10"),
    case(f"verify -m dp-mlp -d {D} -e 1 --trials 1", "trials must be 0 (no multi-run audit) or >= 2"),
    case(f"verify -m dp-mlp -d {D} -e 1 --confidence 0", "confidence must be in (0, 1)"),
    case(f"verify -m dp-mlp -d {D} -e 1 --checks nope", "unknown check(s) nope"),
    case(f"verify -m dp-mlp -d {D} -e 1 --seeds 0 0", "seeds must be distinct non-negative integers"),
    case(f"verify -m dp-mlp -d {D} -e 1 --set nope=1", "unknown hyperparameter 'nope'"),
    case(f"verify -m dp-mlp -d {D} -e 1 --threads -2", "--threads must be >= 0"),
    case(f"verify -m dp-mlp -d {D} -e 1 --data-root {{tmp}}/missing", "does not exist or is not a folder"),
    case(f"verify -m dp-mlp -d {D} -e 1 -o {{tmp}}/missing/v.json", "cannot write in {tmp}/missing (no such"),
    case(f"verify -m dp-mlp -d {D} -e 1 -o {{tmp}}/folder", "is a directory; give a file name"),
    # --- bench sweep -----------------------------------------------------------------------------------------
    case("sweep {tmp}/missing.yaml", "sweep config {tmp}/missing.yaml not found"),
    case("sweep {tmp}/folder", "sweep config {tmp}/folder is a folder, not a file"),
    case("sweep {tmp}/bad-method.yaml", "unknown method 'nope'"),
    case("sweep {tmp}/bad-dataset.yaml", "unknown dataset 'Coraa'"),
    case("sweep {tmp}/delta-zero.yaml", "delta = 0"),
    case("sweep {tmp}/ok.yaml --workers 0", "--workers must be >= 1"),
    case("sweep {tmp}/ok.yaml --max-retries -1", "--max-retries must be >= 0"),
    case("sweep {tmp}/ok.yaml --threads -1", "--threads must be >= 0"),
    case("sweep {tmp}/ok.yaml --address auto", "--address is for --executor ray"),
    case(["sweep", "{tmp}/ok.yaml", "--experiment", ""], "--experiment must be a non-empty name"),
    case("sweep {tmp}/ok.yaml -o {tmp}/missing/s.json", "cannot write in {tmp}/missing (no such folder"),
    case("sweep {tmp}/ok.yaml -o /proc/s.json", "cannot write in /proc (cannot create a file there", LINUX_PROC),
    case("sweep {tmp}/ok.yaml -o {tmp}/folder", "is a directory; give a file name"),
    case("sweep {tmp}/ok.yaml --export {tmp}/missing/e.jsonl", "--export {tmp}/missing/e.jsonl: cannot write in"),
    case("sweep {tmp}/ok.yaml --export {tmp}/missing/e/", "cannot write in {tmp}/missing (no such folder"),
    case("sweep {tmp}/ok.yaml --export {tmp}/blocker/e/", "cannot write in {tmp}/blocker (not a folder)"),
    case("sweep {tmp}/ok.yaml --teacher-cache {tmp}/blocker/t", "--teacher-cache {tmp}/blocker/t: cannot write "
                                                                "in {tmp}/blocker (not a folder)"),
    case("sweep {tmp}/ok.yaml --teacher-cache /proc/x/t", "--teacher-cache /proc/x/t: cannot write in /proc",
         LINUX_PROC),
    # --- bench leaderboard -----------------------------------------------------------------------------------
    case("leaderboard --export {tmp}/missing.jsonl", "--export {tmp}/missing.jsonl not found"),
    case("leaderboard --export {tmp}/missing/", "--export {tmp}/missing/ not found"),
    case("leaderboard --site {tmp}/folder --export {tmp}/missing.jsonl", "--export {tmp}/missing.jsonl not found"),
    case("leaderboard --run {tmp}/missing.yaml", "--run {tmp}/missing.yaml not found"),
    case("leaderboard --run {tmp}/ok.yaml --export {tmp}/missing/e.jsonl", "cannot write in {tmp}/missing"),
    case("leaderboard --run {tmp}/ok.yaml --workers 0", "--workers must be >= 1"),
    case("leaderboard --run {tmp}/ok.yaml --threads -1", "--threads must be >= 0"),
    case("leaderboard --workers 2", "--workers and --threads apply with --run only"),
    case("leaderboard --config {tmp}/ok.yaml", "--config picks the cells of a --site build: give --site too"),
    case("leaderboard --site {tmp}/site --config {tmp}/missing.yaml", "--config {tmp}/missing.yaml not found"),
    case("leaderboard --site {tmp}/missing/site", "--site {tmp}/missing/site: cannot write in {tmp}/missing (no "
                                                  "such folder"),
    case("leaderboard --site {tmp}/blocker", "--site {tmp}/blocker is not a folder"),
    case("leaderboard --site {tmp}/site -o {tmp}/lb.md", "--output does not combine with --site"),
    case("leaderboard -o {tmp}/missing/lb.md", "--output {tmp}/missing/lb.md: cannot write in {tmp}/missing"),
    case("leaderboard -o {tmp}/folder", "--output {tmp}/folder is a directory"),
    case("leaderboard -o /proc/lb.md", "cannot write in /proc (cannot create a file there", LINUX_PROC),
    case("leaderboard --write-export {tmp}/missing/x.jsonl", "--write-export {tmp}/missing/x.jsonl: cannot write"),
    case(["leaderboard", "--experiment", ""], "--experiment must be a non-empty name"),
    case("leaderboard --check {tmp}/missing.jsonl", "export {tmp}/missing.jsonl not found"),
    case("leaderboard --check {tmp}/folder --site {tmp}/site", "--check only checks an export"),
    # --- bench list ------------------------------------------------------------------------------------------
    case("list nope", "unknown method 'nope'"),
    # --- bench reproduce -------------------------------------------------------------------------------------
    case("reproduce nope/cora", "no finished run record named 'nope/cora'"),
    case("reproduce x --export {tmp}/missing", "--export {tmp}/missing not found"),
    case("reproduce x --export {tmp}/blocker -o {tmp}/missing/r.json", "cannot write in {tmp}/missing"),
    # --- bench study -----------------------------------------------------------------------------------------
    case("study nope", "unknown study 'nope'; available: accountant-conformance"),
    case("list methods --data-root {tmp}/missing", "--data-root {tmp}/missing does not exist"),
    case("list datasets --data-root {tmp}/blocker", "--data-root {tmp}/blocker does not exist or is not a folder"),
    # --- bench account: every form ---------------------------------------------------------------------------
    case(given(DPSGD, "--delta", "1.5"), "delta must be in (0, 1)"),
    case(given(DPSGD, "--sampling-rate", "2"), "--sampling-rate must be in [0, 1]"),
    case(given(DPSGD, "--steps", "-10"), "--steps must be >= 0"),
    case(given(DPSGD, "--noise-multiplier", "0"), "--noise-multiplier must be > 0"),
    case("account dpsgd --sampling fixed --noise-multiplier 1 --steps 10 --delta 1e-5", "missing --population"),
    case("account dpsgd --sampling fixed --population 10 --batch-size 0 --noise-multiplier 1 --steps 10 "
         "--delta 1e-5", "--batch-size must be >= 1"),
    case("account dpsgd --sampling poisson --sampling-rate 0.01 --epsilon 0 --steps 10 --delta 1e-5",
         "epsilon must be > 0"),
    case("account dp-mlp --num-train 0 --batch-size 10 --steps 10 --noise-multiplier 1 --delta 1e-5",
         "--num-train must be >= 1"),
    case("account dpgnn --num-train 100 --batch-size 10 --max-degree 3 --layers -1 --steps 10 "
         "--noise-multiplier 1 --delta 1e-5", "--layers must be >= 0"),
    case("account dpgnn --num-train 10 --batch-size 20 --max-degree 3 --layers 1 --noise-multiplier 1 --steps 5 "
         "--delta 1e-5", "batch_size"),
    case("account drw --num-nodes 100 --walk-length 3 --restarts 0 --batch-size 10 --steps 10 "
         "--noise-multiplier 1 --delta 1e-5", "--restarts must be >= 1"),
    case("account drw --num-nodes 100 --walk-length 3 --batch-size 10 --noise-multiplier 1 --steps 10 "
         "--num-subgraphs 5 --delta 1e-5", "M_min"),
    case("account gap --level edge --depth 2 --noise-multiplier 1 --delta 1e-5", "is node-level"),
    case("account gap --level edge --depth -1 --sigma 1 --delta 1e-5", "--depth must be >= 0"),
    case("account gap --level node --depth 2 --noise-multiplier 1 --delta 1e-5", "missing --num-train"),
    case("account progap --level edge --depth 2 --sigma -1 --delta 1e-5", "--sigma must be > 0"),
    case(given(PROGAP_NODE, "--sigma-ap", "0"), "--sigma-ap must be > 0"),
    case(given(PROGAP_NODE, "--num-nodes", "1000"), "understates"),
    case("account edgerand --epsilon-link 0 --epsilon-density 1", "--epsilon-link and --epsilon-density must be > 0"),
    case("account edgerand --epsilon-link 1 --epsilon-density 1 --delta 1", "delta must be in [0, 1)"),
    case("account privgnn --queries -1 --lam 1 --sampling-rate 0.5 --delta 1e-5", "--queries must be >= 0"),
    case("account privgnn --queries 10 --lam 1 --sampling-rate 1.5 --delta 1e-5", "--sampling-rate must be in"),
    case("account privgnn --queries 10 --lam 1 --sampling-rate 0.5 --sensitivity 0 --delta 1e-5",
         "--sensitivity must be > 0"),
    case("account pate --queries 10 --lam -1 --delta 1e-5", "--lam must be > 0"),
    case("account pate --queries 10 --lam 1 --delta 0", "delta must be in (0, 1)"),
    case("account run nope", "no tracked run 'nope'"),
    case("account run nope --delta 2", "delta must be in [0, 1)"),
    # --- bench accountants ------------------------------------------------------------------------------------
    case("accountants list nope", "unknown accountant 'nope'"),
    case("accountants check -a nope", "unknown accountant 'nope'"),
    case(["accountants", "check", "-a", ","], "no accountant given"),
    case(f"accountants check --corpus {MINI} --tag no-such-tag", "no case has tag 'no-such-tag'"),
    case(f"accountants check --corpus {MINI} --cases zzz*", "--cases 'zzz*' matches no case id"),
    case("accountants check --corpus {tmp}/missing.json", "conformance corpus file {tmp}/missing.json not found"),
    case("accountants check --corpus {tmp}/blocker", "is not JSON"),
    case(f"accountants check --corpus {MINI} --against {{tmp}}/missing.json",
         "golden file {tmp}/missing.json not found"),
    case(f"accountants check --corpus {MINI} --against {{tmp}}/blocker", "golden file {tmp}/blocker is not JSON"),
    case(f"accountants check --corpus {MINI} --rtol -1", "--rtol must be a finite number >= 0"),
    case(f"accountants check --corpus {MINI} --record {{tmp}}/missing/g.json", "--record {tmp}/missing/g.json: "
                                                                                "cannot write in {tmp}/missing"),
    case(f"accountants check --corpus {MINI} --junit {{tmp}}/folder", "--junit {tmp}/folder is a directory"),
    case(f"accountants check --corpus {MINI} --record /proc/g.json", "cannot write in /proc", LINUX_PROC),
    # --- bench perf: argument checks only (every case fails before anything is timed) -------------------------
    case("perf dpsgd --batch 0", "--batch must be >= 1"),
    case("perf whitebox --runs 0", "--runs must be >= 1 and --canaries >= 4"),
    case("perf whitebox --method nope", "unknown method 'nope'"),
    case("perf all --only nope", "--only: unknown benchmark nope"),
    case("perf audits --workers 0", "--workers must be >= 1"),
    case("perf audits --mechanism nope", "unknown mechanism 'nope'"),
    case("perf audits --epsilons 0", "epsilon must be a positive finite number"),
    case("perf audits --trials 5", "trials must be an integer >= 100"),
    case("perf dpsgd --density 2", "--density must be in (0, 1]"),
    case("perf dpsgd --threads -1", "--threads must be >= 0"),
    case("perf dpsgd --min-run-time 0", "--min-run-time must be > 0"),
    case("perf dpsgd --device gpu", "unknown --device 'gpu'"),
    case("perf dpsgd --baseline-rev no-such-rev", "--baseline-rev no-such-rev is not a commit"),
    case("perf dpgnn-fit --rounds 0", "--rounds must be >= 1"),
    case("perf dpgnn-fit --dataset nope", "unknown dataset 'nope'"),
    case("perf dpgnn-fit --split nope", "unknown split 'nope'"),
    case("perf dpgnn-fit --epsilon 0", "--epsilon must be > 0"),
    case("perf dpgnn-fit --delta 1", "delta must be in (0, 1)"),
    case("perf dpgnn-fit --data-root {tmp}/missing", "--data-root {tmp}/missing does not exist"),
    case("perf dpgnn-sampler --repeats 0", "--repeats must be >= 1"),
    case("perf dpgnn-sampler --max-degree -1", "--max-degree must be >= 0"),
    case("perf dpgnn-sampler --dataset csbm:nodez=5", "bad option"),
    case("perf drw-sampler --orders nope", "--orders takes a comma-separated subset"),
    case("perf drw-sampler --walk-length -1", "--walk-length must be >= 0"),
    case("perf drw-sampler --restarts 0", "--restarts must be >= 1"),
    case("perf privgnn --teachers 0", "--teachers must be >= 1"),
    case("perf privgnn --nodes 5000 --private 100", "--nodes (5000) cannot exceed --private (100)"),
    case("perf privgnn --dataset nope", "unknown dataset 'nope'"),
    case("perf fit --rounds 0", "--rounds must be >= 1"),
    case("perf fit --methods nope --device cpu", "unknown method 'nope'"),
    case("perf fit --datasets nope --device cpu", "unknown dataset 'nope'"),
    case("perf fit --device gpu", "unknown --device 'gpu'"),
    case("perf fit --device cpu --reference tpu", "unknown --reference 'tpu'"),
    case("perf fit --device cpu --reference-threads 0", "--reference-threads must be >= 1"),
    case("perf scale --families nope", "unknown family 'nope'"),
    case("perf scale --nodes 0", "--nodes must be >= 2"),
    case("perf scale --degrees 0", "--degrees must be > 0"),
    case("perf scale --max-epochs -1", "--max-epochs must be >= 0"),
    case("perf scale --mem-cap 0", "--mem-cap must be > 0"),
    case("perf scale --records {tmp}/missing/r.jsonl", "--records"),
    case("perf scale --report --records {tmp}/missing.jsonl", "not found"),
]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """This test's folder, with the files the cases name."""
    (tmp_path / "blocker").write_text("a file, not a folder\n")
    (tmp_path / "folder").mkdir()
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo")
    else:  # pragma: no cover
        (tmp_path / "fifo").mkdir()
    config = f"experiment: bad-input-sweep\ndatasets: ['{D}']\nseeds: [0]\n"
    (tmp_path / "ok.yaml").write_text(config + "methods: [mlp]\n")
    (tmp_path / "bad-method.yaml").write_text(config + "methods: [nope]\n")
    (tmp_path / "bad-dataset.yaml").write_text("datasets: [Cora, Coraa]\nmethods: [mlp]\n")
    (tmp_path / "delta-zero.yaml").write_text(config + "methods: [dp-mlp]\nepsilons: [1]\ndelta: 0\n")
    return tmp_path


def all_runs() -> int:
    """Runs in every experiment of this session's store (deleted ones included)."""
    from mlflow.entities import ViewType

    client = tracking.client()
    ids = [e.experiment_id for e in client.search_experiments(view_type=ViewType.ALL)]
    return len(client.search_runs(ids, run_view_type=ViewType.ALL, max_results=50000)) if ids else 0


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) + ("/" if p.is_dir() else "") for p in root.rglob("*"))


@pytest.mark.parametrize("argv,message", CASES)
def test_bad_input_is_one_error_line_exit_2_before_any_run(argv, message, folder, capsys, monkeypatch):
    monkeypatch.setenv("BENCH_OFFLINE", "1")
    argv = [a.replace("{tmp}", str(folder)) for a in argv]
    message = message.replace("{tmp}", str(folder))
    before_runs, before_tree = all_runs(), tree(folder)
    if argv[0] in ("run", "attack", "audit", "verify"):
        argv += ["--no-progress"]
    code = main(argv)
    out, err = capsys.readouterr()
    lines = [line for line in err.strip().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert code == 2, (code, err[-2000:])
    assert len(errors) == 1 and lines[-1] == errors[0], err[-2000:]
    assert message in errors[0], errors[0]
    assert "Traceback" not in err and "rerun with --debug" not in err
    assert out == "", out[-2000:]
    assert all_runs() == before_runs, "a run was opened"
    assert tree(folder) == before_tree, "something was left behind"


def _subcommands(command: str) -> dict[str, set[str]]:
    """``{subcommand: its names}`` of a command that has subcommands (aliases grouped), else ``{}``."""
    parser = build_parser(command)
    top = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    inner = [a for a in top.choices[command]._actions if isinstance(a, argparse._SubParsersAction)]
    if not inner:
        return {}
    groups: dict[int, set[str]] = {}
    for name, sub in inner[0].choices.items():
        groups.setdefault(id(sub), set()).add(name)
    return {min(names, key=len): names for names in groups.values()}


def test_every_command_has_cases():
    covered = {}
    for param in CASES:
        argv = param.values[0]
        covered.setdefault(argv[0], set()).add(argv[1] if len(argv) > 1 else "")
    commands = set(command_index())
    assert commands - set(covered) == set(), "commands without a bad-input case"
    for command in sorted(commands):
        for sub, names in _subcommands(command).items():
            assert names & covered[command], f"bench {command} {sub} has no bad-input case"


def test_the_output_rule_is_in_every_output_options_help():
    """Every option that writes a file or folder says the rule in --help (its folder must exist)."""
    from bench.cliargs import DIR_RULE, FILE_RULE

    writes = {"run": ["--output", "--plot-dir"], "attack": ["--output", "--plot-dir"], "audit": ["--output"],
              "verify": ["--output"], "sweep": ["--output", "--export"],
              "leaderboard": ["--output", "--site", "--write-export"]}
    for command, options in writes.items():
        parser = build_parser(command)
        top = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        helps = {s: a.help for a in top.choices[command]._actions for s in a.option_strings}
        for option in options:
            assert FILE_RULE in helps[option] or DIR_RULE in helps[option], f"bench {command} {option}"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths")
def test_an_output_file_in_an_existing_folder_is_accepted(tmp_path):
    from bench.io import check_output_dir, check_output_file, check_writable

    check_output_file(tmp_path / "new.json")
    check_output_dir(tmp_path / "new-folder", "--site")
    check_output_dir(tmp_path / "a" / "b" / "cache", "--teacher-cache", parents=True)
    check_writable(str(tmp_path / "shards") + "/", "--export", directory_ok=True)
    assert list(tmp_path.iterdir()) == []  # the checks create nothing (their probe file is gone)


def test_an_unusual_delta_runs_with_one_warning_line(capsys):
    """A delta of at least 1/#units (or above 1e-2) is no guarantee: the run goes ahead, saying why."""
    assert main(["run", "-m", "dp-mlp", "-d", "csbm:nodes=120,classes=2", "-e", "1", "--delta", "0.5", "--no-track",
                 "--set", "epochs=1", "--no-progress"]) == 0
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("warning:")]
    assert len(err) == 1 and "--delta 0.5 is at least 1/120" in err[0] and "no guarantee" in err[0]
    assert main(["run", "-m", "dp-mlp", "-d", "csbm:nodes=120,classes=2", "-e", "1", "--delta", "1e-3",
                 "--no-track", "--set", "epochs=1", "--no-progress"]) == 0
    assert "warning:" not in capsys.readouterr().err


@pytest.mark.parametrize("extra", [["--noise-multiplier", "1000"], ["--epsilon", "1e-12"]])
def test_the_accountant_answers_at_any_noise_and_epsilon(extra, capsys):
    """At a huge noise the fractional orders' series would need millions of terms: they take the sound
    interpolation, and an account (or a calibration to a tiny epsilon) answers (it ran past 150 s)."""
    argv = [a for a in DPSGD if a not in ("--noise-multiplier", "1")] + extra
    assert main(argv) == 0
    assert "epsilon = " in capsys.readouterr().out


def test_a_plugin_that_exits_while_importing_is_an_error_not_a_quiet_success(tmp_path, capsys):
    plugin = tmp_path / "exits.py"
    plugin.write_text("import sys\nsys.exit(0)\n")
    assert main(["--plugin", str(plugin), "list", "methods"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: plugin") and "SystemExit" in err[0]


def test_a_binary_export_is_one_error_line(tmp_path, capsys):
    from bench import records
    from bench.check import check_export
    from methods.errors import BenchError

    export = tmp_path / "runs.jsonl"
    export.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(BenchError, match="not UTF-8 text"):
        records.load(export)
    report = check_export(export, count_units=False)
    assert not report.ok and "not UTF-8 text" in report.failures[0][1][0]
