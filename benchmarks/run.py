"""Run the fastdual benchmark suite.

    python -m benchmarks.run [--quick] [--problems ...] [--datasets ...] [--alphas ...]
                             [--C ...] [--raw] [--solvers ...] [--repeats R] [--out DIR]

For every (data set, problem, alpha): a high-precision reference fixes P*; every
available solver is run from scratch with growing iteration budgets (or shrinking
tolerances), timed, and scored by the independent evaluator in
:mod:`benchmarks.objective` outside the timing.  Reported: the median time over
repeats to reach a relative suboptimality (P - P*)/|P*| of 1e-2, 1e-4, 1e-6; for
fastdual also the time until its own certificate gap/|primal| <= 1e-4 and the cost
of one epoch in units of the same-run matrix-vector floor.

The LIBSVM sets are loaded with rows at unit norm, or with `--raw` as the files give them
(benchmarks.datasets.load_raw; news20: its first class against the rest). `--C` gives the
regularisation as LIBLINEAR's C instead of alphas: alpha = 1 / (C n) on each data set.

Everything runs on one thread (OMP/OpenBLAS/MKL set to 1 before numpy loads).
Writes ``results.json`` and one PNG per case to ``--out`` (default
``benchmarks/results/``).
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from . import datasets as D  # noqa: E402
from .objective import PROBLEMS, primal, relative_suboptimality  # noqa: E402
from .reference import compute_reference  # noqa: E402
from .solvers import FastDual, get_solvers  # noqa: E402
from .timing import (matvec_floor, median_curve, repeat_curves,  # noqa: E402
                     time_to_targets)

REPO_ROOT = D.REPO_ROOT
CERT_TOL = 1e-4

FULL = dict(datasets=list(D.ALL_DATASETS), alphas=[1e-4, 1e-6], repeats=3, n_samples=None,
            max_seconds=120.0, max_run_seconds=60.0)
QUICK = dict(datasets=["a9a", "reuters_lasvm"], alphas=[1e-4], repeats=1, n_samples=5000,
             max_seconds=2.0, max_run_seconds=1.0)
# solvers whose budget is one pass over the data: their epoch cost is measured too
EPOCH_SOLVERS = ("fastdual", "fastdual-spdc", "lightning-SDCA", "sklearn-saga", "sklearn-SGD")


def epoch_cost(solver, ctx, repeats, e1=2, e2=10, min_seconds=0.05, max_epochs=1280):
    """Seconds per epoch: (T(e2) - T(e1)) / (epochs between them), medians over repeats.

    e2 doubles until the difference is at least ``min_seconds`` (timer noise), so
    small data sets get enough epochs to be measured.  Adapters that know how many
    epochs really ran (a solver may stop early once converged) put it in
    ``ctx["epochs_run"]``; it replaces the requested count.  For the others, doubling
    stops when the time no longer grows (the solver stopped on its own).
    """
    def median_time(e):
        runs = []
        for _ in range(repeats):
            ctx.pop("epochs_run", None)
            t0 = time.perf_counter()
            solver.fit(ctx, e)
            runs.append(time.perf_counter() - t0)
        return float(np.median(runs)), ctx.get("epochs_run", e)

    t1, k1 = median_time(e1)
    prev = None
    while True:
        t2, k2 = median_time(e2)
        if k2 <= k1:
            return None
        if prev is not None and t2 < 1.3 * prev[0] and "epochs_run" not in ctx:
            t2, k2 = prev  # no growth: it stopped early; keep the last growing point
            break
        if t2 - t1 >= min_seconds or e2 >= max_epochs or k2 < e2:
            break
        prev = (t2, k2)
        e2 *= 2
    return max(t2 - t1, 0.0) / (k2 - k1)


def fastdual_certificate(ctx, X, y, problem, alpha, p_star, repeats, max_epochs=100000,
                         max_seconds=float("inf")):
    """Time until fastdual's own certificate gap/|primal| <= CERT_TOL, and its honesty.

    Repeats stop early once the cumulated time passes ``max_seconds``; ``max_epochs``
    bounds each run (a run that hits it reports converged = False).
    """
    solver = FastDual()
    walls, model = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = solver.train_to_gap(ctx, CERT_TOL, max_epochs=max_epochs)
        walls.append(time.perf_counter() - t0)
        if sum(walls) > max_seconds:
            break
    gap, prim = float(model.gap_), float(model.primal_)
    hist = list(getattr(model, "history_", []) or [])
    first = next((h for h in hist if h["gap"] <= CERT_TOL * abs(h["primal"])), None)
    p_indep = primal(model.coef_, X, y, problem, alpha)
    return {
        "wall_seconds_median": float(np.median(walls)),
        "history_seconds": None if first is None else float(first["seconds"]),
        "history_epoch": None if first is None else int(first["epoch"]),
        "n_epochs": int(model.n_epochs_), "converged": bool(model.converged_),
        "repeats": len(walls), "max_epochs": int(max_epochs),
        "gap": gap, "primal_reported": prim, "primal_independent": p_indep,
        "relative_gap": gap / abs(prim) if prim else None,
        # the certificate is honest when P(w) - P* <= gap (up to rounding)
        "true_relative_subopt": relative_suboptimality(p_indep, p_star),
        "certificate_holds": bool(p_indep - p_star <= gap + 1e-12 * abs(p_star)),
    }


def run_case(name, X, y, problem, alpha, solvers, cfg, floor):
    print("\n== %s | %s | alpha=%g" % (name, problem, alpha), flush=True)
    pb = PROBLEMS[problem]
    ref = compute_reference(X, y, pb, alpha)
    p_ref = ref["p_star"]
    case = {"dataset": name, "problem": problem, "alpha": alpha, "reference": ref,
            "solvers": {}, "loadavg_start": os.getloadavg()}
    for s in solvers:
        if not s.supports(problem):
            continue
        entry = {"kind": s.kind}
        try:
            ctx = s.prepare(X, y, problem, alpha)
            runs = repeat_curves(s, ctx, X, y, pb, alpha, p_ref, cfg["repeats"],
                                 cfg["max_seconds"], cfg["max_run_seconds"])
            entry["runs"] = runs
            if s.name in EPOCH_SOLVERS:
                sec = epoch_cost(s, ctx, cfg["repeats"])
                entry["epoch_seconds"] = sec
                entry["epoch_floor_units"] = (sec / floor["floor"]
                                              if sec is not None and floor["floor"] else None)
            if s.name == "fastdual":
                # bound the certificate run to ~4x the curve budget
                cap = 4 * cfg["max_seconds"]
                max_ep = 100000
                if entry.get("epoch_seconds"):
                    max_ep = int(min(max_ep, max(50, cap / entry["epoch_seconds"])))
                entry["certificate"] = fastdual_certificate(ctx, X, y, pb, alpha, p_ref,
                                                            cfg["repeats"], max_epochs=max_ep,
                                                            max_seconds=cap)
        except Exception as exc:  # a peer failing on one case must not stop the suite
            entry["error"] = "%s: %s" % (type(exc).__name__, exc)
            print("  %-24s ERROR %s" % (s.name, entry["error"]), flush=True)
        case["solvers"][s.name] = entry
        if "runs" in entry:
            last = entry["runs"][0][-1]
            print("  %-24s %3d fits, last budget %-8g P=%.12g  (%.1f s)"
                  % (s.name, len(entry["runs"][0]), last["budget"], last["primal"],
                     sum(pt["seconds"] for r in entry["runs"] for pt in r)), flush=True)
    # P* = best value any reference or solver reached
    best = [p_ref] + [pt["primal"] for e in case["solvers"].values() for r in e.get("runs", [])
                      for pt in r]
    p_star = float(min(best))
    case["loadavg_end"] = os.getloadavg()
    case["p_star"] = p_star
    case["p_star_source"] = "reference" if p_star == p_ref else "solver run"
    for sname, e in case["solvers"].items():
        if "runs" not in e:
            continue
        e["curve"] = median_curve(e["runs"])
        e["time_to"] = time_to_targets(e["runs"], p_star)
        e["final_subopt"] = relative_suboptimality(e["curve"][-1]["primal"], p_star)
        if "certificate" in e:
            c = e["certificate"]
            c["true_relative_subopt"] = relative_suboptimality(c["primal_independent"], p_star)
            c["certificate_holds"] = bool(c["primal_independent"] - p_star
                                          <= c["gap"] + 1e-12 * abs(p_star))
    return case


def fmt_t(t):
    if t is None:
        return "-"
    return "%.3g" % t


def print_case_table(case, file=sys.stdout):
    head = "| solver | t(1e-2) s | t(1e-4) s | t(1e-6) s | best subopt | fits |"
    ref = case["reference"]
    cert = ""
    if "dual_bound" in ref:
        cert = "; certified: (P* - D_ref)/P* <= %.1e" % (
            (case["p_star"] - ref["dual_bound"]) / abs(case["p_star"]))
    print("\n%s, %s, alpha=%g: P* = %.12g (from %s%s)" % (
        case["dataset"], case["problem"], case["alpha"], case["p_star"],
        case["p_star_source"], cert), file=file)
    print(head, file=file)
    print("|---|---:|---:|---:|---:|---:|", file=file)
    for sname, e in case["solvers"].items():
        if "error" in e:
            print("| %s | error: %s | | | | |" % (sname, e["error"][:60]), file=file)
            continue
        tt = e["time_to"]
        best = min(relative_suboptimality(pt["primal"], case["p_star"]) for pt in e["curve"])
        print("| %s | %s | %s | %s | %.1e | %d |" % (
            sname, fmt_t(tt["0.01"]), fmt_t(tt["0.0001"]), fmt_t(tt["1e-06"]),
            max(best, 0.0), len(e["curve"])), file=file)
        if "certificate" in e:
            c = e["certificate"]
            if c["converged"]:
                first = "%s s (wall, tol=1e-4)" % fmt_t(c["wall_seconds_median"])
            else:
                first = "not reached in %d epochs (%s s)" % (c["n_epochs"],
                                                              fmt_t(c["wall_seconds_median"]))
            print("| fastdual certificate gap/P <= 1e-4 | %s | epoch %s at %s s "
                  "| true subopt %.1e | holds: %s | |" % (
                      first, c["history_epoch"], fmt_t(c["history_seconds"]),
                      c["true_relative_subopt"], c["certificate_holds"]), file=file)


def parse_args(argv):
    p = argparse.ArgumentParser(description="fastdual benchmark suite")
    p.add_argument("--quick", action="store_true",
                   help="small subset (5000 rows of a9a and reuters_lasvm, alpha 1e-4, 1 repeat)")
    p.add_argument("--problems", nargs="+", choices=list(PROBLEMS), default=list(PROBLEMS))
    p.add_argument("--datasets", nargs="+", choices=list(D.ALL_DATASETS), default=None)
    p.add_argument("--alphas", nargs="+", type=float, default=None)
    p.add_argument("--C", nargs="+", type=float, default=None,
                   help="LIBLINEAR's C instead of --alphas: alpha = 1 / (C n) per data set")
    p.add_argument("--raw", action="store_true",
                   help="rows as the files give them, not normalized (LIBSVM sets only)")
    p.add_argument("--solvers", nargs="+", default=None, help="restrict to these solver names")
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--n-samples", type=int, default=None,
                   help="random subset of rows (rows generated, for the synthetic sets)")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="cumulated fit time after which a solver's curve stops growing")
    p.add_argument("--out", default=os.path.join(REPO_ROOT, "benchmarks", "results"))
    p.add_argument("--no-plots", action="store_true")
    args = p.parse_args(argv)
    cfg = dict(QUICK if args.quick else FULL)
    for key in ("datasets", "alphas", "repeats", "n_samples", "max_seconds"):
        val = getattr(args, key)
        if val is not None:
            cfg[key] = val
    if args.max_seconds is not None:
        cfg["max_run_seconds"] = args.max_seconds / 2
    return args, cfg


def main(argv=None):
    args, cfg = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    solvers = get_solvers(args.solvers)
    skipped = {}
    for s in solvers:
        reason = s.available()
        if reason:
            skipped[s.name] = reason
            print("SKIP %-24s %s" % (s.name, reason), flush=True)
    solvers = [s for s in solvers if s.name not in skipped]
    meta = {"argv": sys.argv[1:] if argv is None else list(argv), "config": cfg,
            "python": platform.python_version(), "machine": platform.machine(),
            "cpu_count": os.cpu_count(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                  time.gmtime()),
            "skipped": skipped, "versions": _versions()}
    results = {"meta": meta, "datasets": {}, "cases": []}
    json_path = os.path.join(args.out, "results.json")
    for name in cfg["datasets"]:
        t0 = time.perf_counter()
        if args.raw:
            if name not in D.LIBSVM_SETS:
                raise SystemExit(f"--raw: {name} is generated, not a LIBSVM file")
            X, y = D.load_raw(name)
        else:
            X, y = D.load(name, n_samples=cfg["n_samples"])
        info = D.describe(X, y)
        info["load_seconds"] = time.perf_counter() - t0
        info["matvec"] = matvec_floor(X)
        results["datasets"][name] = info
        print("\n# %s: n=%d d=%d nnz=%d, floor (X@w + X.T@a) = %.3g ms"
              % (name, info["n"], info["d"], info["nnz"], 1e3 * info["matvec"]["floor"]),
              flush=True)
        alphas = (cfg["alphas"] if args.C is None
                  else [1.0 / (C * X.shape[0]) for C in args.C])
        for problem in args.problems:
            for alpha in alphas:
                case = run_case(name, X, y, problem, alpha, solvers, cfg, info["matvec"])
                case["rows"] = "raw" if args.raw else "unit"
                results["cases"].append(case)
                print_case_table(case)
                if not args.no_plots:
                    from .plots import plot_case
                    plot_case(case, args.out)
                with open(json_path, "w") as f:
                    json.dump(results, f, indent=1, default=float)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with open(json_path, "w") as f:
        json.dump(results, f, indent=1, default=float)
    print("\n" + summary_tables(results))
    print("\nwrote %s" % json_path)


def _versions():
    from importlib import metadata
    out = {}
    for dist in ("numpy", "scipy", "scikit-learn", "liblinear-official", "snapml", "tick",
                 "sklearn-contrib-lightning", "fastdual"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def summary_tables(results):
    """Markdown tables: data sets (with floor), then one table per case, then epoch costs."""
    lines = ["| data | n | d | nnz | floor X@w + X.T@a (ms) |", "|---|---:|---:|---:|---:|"]
    for name, info in results["datasets"].items():
        lines.append("| %s | %d | %d | %d | %.3g |" % (name, info["n"], info["d"], info["nnz"],
                                                      1e3 * info["matvec"]["floor"]))
    import io
    buf = io.StringIO()
    for case in results["cases"]:
        print_case_table(case, file=buf)
    lines.append(buf.getvalue())
    rows = []
    for case in results["cases"]:
        for sname, e in case["solvers"].items():
            if e.get("epoch_seconds") is not None:
                rows.append("| %s | %s | %g | %s | %.3g | %.2f |" % (
                    case["dataset"], case["problem"], case["alpha"], sname,
                    1e3 * e["epoch_seconds"], e["epoch_floor_units"]))
    if rows:
        lines += ["", "| data | problem | alpha | solver | epoch (ms) | epoch / floor |",
                  "|---|---|---:|---|---:|---:|"] + rows
    return "\n".join(lines)


if __name__ == "__main__":
    main()
