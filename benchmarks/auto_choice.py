"""solver="auto" against each of fastdual's solvers it chooses among: time to a certified 1e-4
relative duality gap (train(tol=1e-4), the stop decided by the certificate), one thread.

    python -m benchmarks.auto_choice [--datasets a9a w8a ijcnn1 reuters_lasvm news20]
                                     [--alphas 1e-4 1e-6 1e-8] [--repeats 3]

Problems: logistic, squared hinge, smoothed hinge, ridge (squared loss on the +-1 labels), all
l2, and elastic-net logistic (l1_ratio 0.5). Candidates: plain SDCA (skipped where its condition
number kappa = R^2 / (gamma l2 n) is above 2000: thousands of epochs per digit), accelerated
SDCA, Newton (l2 only), and auto. Times are medians of `repeats` runs (one run when the first
takes over a second); '*' marks a run that stopped at max_epochs=1000 without reaching 1e-4.
The table's last column is auto's time over the fastest candidate's in the same run.
"""
import argparse
import json
import warnings

import numpy as np

from benchmarks.datasets import load
from benchmarks.timing import timed_train as timed
from fastdual._problem import build_problem
from fastdual.solvers import auto

PROBLEMS = {"logistic": ("logistic", 0.0), "squared_hinge": ("squared_hinge", 0.0),
            "smooth_hinge": ("smooth_hinge", 0.0), "ridge": ("squared", 0.0),
            "elastic_logistic": ("logistic", 0.5)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+",
                        default=["a9a", "w8a", "ijcnn1", "reuters_lasvm", "news20"])
    parser.add_argument("--alphas", nargs="+", type=float, default=[1e-4, 1e-6, 1e-8])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    print("| data | problem | alpha | kappa | auto picks | sdca (s) | sdca+acc (s) | newton (s) "
          "| auto (s) | auto / fastest |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|")
    for name in args.datasets:
        X, y = load(name)
        for problem_name in args.problems:
            loss, l1_ratio = PROBLEMS[problem_name]
            for alpha in args.alphas:
                problem = build_problem(X, y, loss=loss, alpha=alpha, C=None,
                                        l1_ratio=l1_ratio, fit_intercept=True,
                                        intercept_scaling=1.0, sample_weight=None,
                                        loss_params={})
                kappa = auto.condition_number(problem)
                pick, options, number = auto.rule(problem)
                common = dict(loss=loss, alpha=alpha, l1_ratio=l1_ratio)
                results = {}
                if kappa <= 2000:
                    results["sdca"] = timed(X, y, args.repeats, solver="sdca", **common)
                results["acc"] = timed(X, y, args.repeats, solver="sdca", acceleration=True,
                                       **common)
                if l1_ratio == 0.0:
                    results["newton"] = timed(X, y, args.repeats, solver="newton", **common)
                results["auto"] = timed(X, y, args.repeats, **common)
                done = [v[0] for k, v in results.items() if k != "auto" and v[1]]
                fastest = min(done) if done else np.nan
                cell = {k: "-" if k not in results else
                        "%.3g%s" % (results[k][0], "" if results[k][1] else "*")
                        for k in ("sdca", "acc", "newton", "auto")}
                label = pick + (" +acc" if options.get("acceleration") else "") + f" ({number})"
                print(f"| {name} | {problem_name} | {alpha:g} | {kappa:.3g} | {label} | "
                      f"{cell['sdca']} | {cell['acc']} | {cell['newton']} | {cell['auto']} | "
                      f"{results['auto'][0] / fastest:.2f} |", flush=True)
                rows.append(dict(dataset=name, problem=problem_name, alpha=alpha, kappa=kappa,
                                 pick=label, **{k: v[0] for k, v in results.items()},
                                 converged={k: v[1] for k, v in results.items()}))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
