"""The `fastdual` command (also `python -m fastdual`)."""
import argparse
import sys
import time

import numpy as np


def _demo(args):
    import fastdual
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()   # shipped inside scikit-learn: no download
    X, y = data.data, data.target
    rng = np.random.default_rng(0)
    order = rng.permutation(X.shape[0])
    n_train = int(0.75 * X.shape[0])
    train_idx, test_idx = order[:n_train], order[n_train:]
    mean, std = X[train_idx].mean(axis=0), X[train_idx].std(axis=0)
    X = (X - mean) / std
    labels = np.where(y == 1, "benign", "malignant")
    print(f"breast cancer (scikit-learn's copy of the UCI data): {X.shape[0]} samples, "
          f"{X.shape[1]} features; training on {n_train}, testing on {X.shape[0] - n_train}")
    print(f"loss={args.loss}, C={args.C}, tol={args.tol}")
    start = time.perf_counter()
    model = fastdual.train(X[train_idx], labels[train_idx], loss=args.loss, C=args.C,
                           tol=args.tol, random_state=0, verbose=args.verbose)
    seconds = time.perf_counter() - start
    accuracy = np.mean(model.predict(X[test_idx]) == labels[test_idx])
    print(f"test accuracy  {accuracy:.4f}")
    print(f"duality gap    {model.gap_:.3e} (relative {model.relative_gap_:.2e}, "
          f"converged: {model.converged_})")
    print(f"epochs         {model.n_epochs_}")
    print(f"training time  {seconds * 1e3:.1f} ms")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(
        prog="fastdual",
        description="Regularized linear models by dual coordinate methods, certified by their "
                    "duality gap.")
    sub = parser.add_subparsers(dest="command")
    demo = sub.add_parser("demo", help="train on an embedded real data set and print accuracy, "
                                       "gap and time")
    demo.add_argument("--loss", default="smooth_hinge",
                      choices=["hinge", "squared_hinge", "smooth_hinge", "logistic"])
    demo.add_argument("-C", type=float, default=1.0, help="LIBLINEAR's C (default 1)")
    demo.add_argument("--tol", type=float, default=1e-4, help="relative duality gap (default 1e-4)")
    demo.add_argument("-v", "--verbose", action="store_true", help="one line per epoch")
    demo.set_defaults(handler=_demo)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return 2
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
