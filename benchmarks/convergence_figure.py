"""The certified gap of fastdual's solvers on one problem, drawn by fastdual.plot_convergence.

    python -m benchmarks.convergence_figure [--data a9a] [--loss logistic] [--alpha 1e-6]

Writes docs/figures/convergence_<data>_<loss>.png: the relative duality gap (every epoch
certified) and the primal against seconds for SDCA, SPDC and Newton.
"""
import argparse
import os

import matplotlib
matplotlib.use("Agg")

import fastdual  # noqa: E402
from benchmarks.datasets import load  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="a9a")
    parser.add_argument("--loss", default="logistic")
    parser.add_argument("--alpha", type=float, default=1e-6)
    parser.add_argument("--out", default="docs/figures")
    args = parser.parse_args(argv)
    X, y = load(args.data)
    models = [fastdual.train(X, y, loss=args.loss, alpha=args.alpha, solver=solver, tol=1e-6,
                             max_epochs=300, check_every=1, random_state=0)
              for solver in ("sdca", "spdc", "newton")]
    fig = fastdual.plot_convergence(models, x="seconds", labels=["SDCA", "SPDC", "Newton"])
    fig.suptitle(f"{args.data}, {args.loss}, alpha = {args.alpha:g}", fontsize=10)
    fig.tight_layout()
    path = os.path.join(args.out, f"convergence_{args.data}_{args.loss}.png")
    fig.savefig(path, dpi=110)
    for name, model in zip(("SDCA", "SPDC", "Newton"), models):
        print(f"{name:7s} epochs {model.n_epochs_:4d}  relative gap {model.relative_gap_:.2e}  "
              f"{model.history_[-1]['seconds']:.3f} s")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
