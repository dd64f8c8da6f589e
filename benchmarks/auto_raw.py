"""solver="auto" on rows as distributed (raw) and normalized: the hinge-type losses on wide data,
and the command line against LIBLINEAR on the 20-class news20 file.

    python -m benchmarks.auto_raw [--datasets news20 reuters_lasvm synth] [--C 0.1 1 10]
                                  [--losses squared_hinge smooth_hinge] [--cap 20]
                                  [--solvers sdca acc newton auto] [--small-alphas 1e-6 1e-7]
                                  [--cli] [--json FILE]

Cases: news20 (first class against the rest), reuters_lasvm and a text-like synthetic set
(benchmarks.datasets.make_sparse_text, 20,000 x 200,000, 100 nonzeros a row; its "raw" rows
are the unit rows scaled by a lognormal length, as word counts make document lengths vary),
each with rows raw and normalized to unit norm, at C = 0.1, 1, 10 (alpha = 1 / (C n)), with
LIBLINEAR's regularized intercept (B = 1). For each: the time to a certified relative gap of
1e-4 (train(tol=1e-4), max_epochs=1000) of plain SDCA, accelerated SDCA, Newton and auto, a
run stopped after `cap` seconds (by its callback) or at max_epochs is marked '*' with the
relative gap it reached. auto's column names what ran (the switches, if any).
--small-alphas: the same on unit rows, squared hinge, at the given alphas (rule 4's
acceleration regime).

--cli: `fastdual train -s 1 -c 1 -B 1` on the raw 20-class news20 file against LIBLINEAR's
train with the same options (liblinear-official's Python binding, one thread), wall time of
each in the same run (the file decompressed once to a temporary folder), and the ratio.
"""
import argparse
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import scipy.sparse as sp

import fastdual
from fastdual._problem import build_problem
from fastdual.solvers import auto
from fastdual.solvers.switching import label
from benchmarks.datasets import (compile_package, data_dir, load_raw, make_sparse_text,
                                 normalize_rows)

SOLVERS = {"sdca": dict(solver="sdca"), "acc": dict(solver="sdca", acceleration=True),
           "newton": dict(solver="newton"), "auto": dict(solver="auto")}


def synthetic():
    X, y = make_sparse_text(n=20_000, d=200_000, nnz_per_row=100, seed=0)
    lengths = np.random.default_rng(1).lognormal(mean=3.0, sigma=1.0, size=X.shape[0])
    raw = sp.csr_matrix(X, copy=True)
    raw.data *= np.repeat(lengths, np.diff(raw.indptr))
    return raw, y


def data(name):
    X, y = synthetic() if name == "synth" else load_raw(name)
    return {"raw": (X, y), "unit": (normalize_rows(X), y)}


def timed(X, y, cap, **kwargs):
    """(seconds, converged, relative gap, what ran) of one capped run."""
    start = time.perf_counter()
    model = fastdual.train(X, y, tol=1e-4, max_epochs=1000, random_state=0,
                           callback=lambda info: info["seconds"] < cap, **kwargs)
    seconds = time.perf_counter() - start
    ran = model.solver
    for switch in getattr(model, "switches_", None) or []:
        ran = f"{switch['from']}>{switch['to']}@{switch['epoch']}"
    return seconds, bool(model.converged_), float(model.relative_gap_), ran


def picked(X, y, **objective):
    """What auto starts with for the problem, e.g. "sdca(acceleration=True)"."""
    problem = build_problem(X, y, loss=objective["loss"], alpha=objective.get("alpha"),
                            C=objective.get("C"), l1_ratio=0.0, fit_intercept=True,
                            intercept_scaling=1.0, sample_weight=None, loss_params={})
    return label(*auto.plan(problem, {}, fastdual.SOLVERS)[0])


def cell(result):
    seconds, converged, gap, _ = result
    return f"{seconds:.3g}" if converged else f"{seconds:.3g}* ({gap:.1e})"


def grid(args):
    rows = []
    names = [n for n in args.solvers]
    print("| data | rows | loss | C | " + " | ".join(names) + " | auto ran | auto / fastest |")
    print("|---|---|---|---:|" + "---:|" * len(names) + "---|---:|")
    for name in args.datasets:
        for rows_kind, (X, y) in data(name).items():
            for loss in args.losses:
                for C in args.C:
                    results = {s: timed(X, y, args.cap, loss=loss, C=C, **SOLVERS[s])
                               for s in names}
                    done = [r[0] for s, r in results.items() if s != "auto" and r[1]]
                    fastest = min(done) if done else np.nan
                    auto = results.get("auto")
                    ratio = auto[0] / fastest if auto else np.nan
                    print(f"| {name} | {rows_kind} | {loss} | {C:g} | "
                          + " | ".join(cell(results[s]) for s in names)
                          + f" | {auto[3] if auto else '-'} | {ratio:.2f} |", flush=True)
                    rows.append(dict(dataset=name, rows=rows_kind, loss=loss, C=C,
                                     **{s: list(r) for s, r in results.items()}))
    return rows


def small_alpha(args):
    """Unit rows at small alpha (kappa in the hundreds to tens of thousands), squared hinge:
    where rule 4 accelerates SDCA."""
    rows = []
    names = list(args.solvers)
    print("\n| data (unit rows) | alpha | " + " | ".join(names) + " | auto ran |")
    print("|---|---:|" + "---:|" * len(names) + "---|")
    for name in args.small_datasets:
        X, y = data(name)["unit"]
        for alpha in args.small_alphas:
            results = {s: timed(X, y, args.cap, loss="squared_hinge", alpha=alpha,
                                **SOLVERS[s]) for s in names}
            auto = results.get("auto")
            first = picked(X, y, loss="squared_hinge", alpha=alpha)
            print(f"| {name} | {alpha:g} | " + " | ".join(cell(results[s]) for s in names)
                  + f" | {first if auto is None or auto[3] == 'sdca' else auto[3]} |",
                  flush=True)
            rows.append(dict(dataset=name, alpha=alpha,
                             **{s: list(r) for s, r in results.items()}))
    return rows


LIBLINEAR_SCRIPT = """
import sys, time
from liblinear.liblinearutil import svm_read_problem, train, problem, parameter
start = time.perf_counter()
y, x = svm_read_problem(sys.argv[1])
read = time.perf_counter() - start
prob = problem(y, x, bias=1)
start = time.perf_counter()
train(prob, parameter('-s 1 -c 1 -B 1 -q'))
print(read, time.perf_counter() - start)
"""


def cli(args):
    """The command line on the raw 20-class news20 against LIBLINEAR, one run each."""
    folder = tempfile.mkdtemp()
    try:
        path = os.path.join(folder, "news20")
        with lzma.open(os.path.join(data_dir(), "news20.xz")) as f, open(path, "wb") as out:
            shutil.copyfileobj(f, out)
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        compile_package()
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", LIBLINEAR_SCRIPT, path], env=env,
                              capture_output=True, text=True, check=True)
        liblinear_wall = time.perf_counter() - start
        read, train = map(float, done.stdout.split())
        start = time.perf_counter()
        done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "fastdual"),
                               "train", "-s", "1", "-c", "1", "-B", "1", path,
                               os.path.join(folder, "news20.model")],
                              env=env, capture_output=True, text=True)
        fastdual_wall = time.perf_counter() - start
        output = done.stdout + done.stderr
        unconverged = output.count("WARNING")
        print("fastdual's last lines:", *output.strip().splitlines()[-3:], sep="\n  ")
        print(f"news20 raw, 20 classes, -s 1 -c 1 -B 1: LIBLINEAR {liblinear_wall:.2f} s wall "
              f"(read {read:.2f} s, train {train:.2f} s); fastdual train {fastdual_wall:.2f} s "
              f"wall (rc {done.returncode}, {unconverged} WARNING lines); ratio "
              f"{fastdual_wall / liblinear_wall:.2f} (wall), "
              f"{fastdual_wall / (read + train):.2f} (over LIBLINEAR's read + train)")
        return dict(liblinear_wall=liblinear_wall, liblinear_read=read, liblinear_train=train,
                    fastdual_wall=fastdual_wall, returncode=done.returncode,
                    convergence_warnings=unconverged)
    finally:
        shutil.rmtree(folder)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=["news20", "reuters_lasvm", "synth"])
    parser.add_argument("--C", nargs="+", type=float, default=[0.1, 1.0, 10.0])
    parser.add_argument("--losses", nargs="+", default=["squared_hinge", "smooth_hinge"])
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS))
    parser.add_argument("--cap", type=float, default=20.0)
    parser.add_argument("--small-alphas", nargs="*", type=float, default=[],
                        help="also unit rows at these alphas (e.g. 1e-6 1e-7 1e-8)")
    parser.add_argument("--small-datasets", nargs="+",
                        default=["news20", "reuters_lasvm", "synth"])
    parser.add_argument("--cli", action="store_true")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    out = {"grid": grid(args)}
    if args.small_alphas:
        out["small_alpha"] = small_alpha(args)
    if args.cli:
        out["cli"] = cli(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
