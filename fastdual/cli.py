"""The `fastdual` command (also `python -m fastdual`)."""
import argparse
import os
import re
import sys
import time

import numpy as np
import scipy.sparse as sp


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


# LIBLINEAR's -s numbers: (loss, l1_ratio, multiclass); the solver is fastdual's own choice.
LIBLINEAR_TYPES = {0: ("logistic", 0.0, None), 1: ("squared_hinge", 0.0, None),
                   2: ("squared_hinge", 0.0, None), 3: ("hinge", 0.0, None),
                   4: ("hinge", 0.0, "crammer_singer"), 5: ("squared_hinge", 1.0, None),
                   6: ("logistic", 1.0, None), 7: ("logistic", 0.0, None),
                   11: ("squared", 0.0, None), 12: ("squared", 0.0, None),
                   13: ("epsilon_insensitive", 0.0, None)}


class _Failure(Exception):
    """A user error the command reports in one line (exit status 1)."""


def _read_svmlight(path, n_features=None):
    from sklearn.datasets import load_svmlight_file
    try:
        return load_svmlight_file(path, zero_based=False, n_features=n_features)
    except OSError as exc:
        raise _Failure(f"cannot read {path!r}: {exc}") from None
    except ValueError as exc:
        line = _bad_line(path)
        where = f" line {line}" if line else ""
        raise _Failure(f"cannot read {path!r}{where}: {exc}") from None


def _bad_line(path):
    """The first line scikit-learn's reader refuses, found by reading byte ranges (bisection
    over the file, then the lines of the last range one by one), or None."""
    import io
    from sklearn.datasets import load_svmlight_file

    def readable(data):
        try:
            load_svmlight_file(io.BytesIO(data), zero_based=False, n_features=1 << 30)
            return True
        except ValueError:
            return False
    with open(path, "rb") as handle:
        content = handle.read()
    lo, hi = 0, len(content)            # content[:lo] reads; content[:hi] does not
    if readable(content):
        return None
    while hi - lo > 4096:
        mid = content.rfind(b"\n", lo, (lo + hi) // 2) + 1
        if mid <= lo:
            break
        if readable(content[:mid]):
            lo = mid
        else:
            hi = mid
    start = lo
    for offset, raw in enumerate(content[lo:hi].split(b"\n")):
        if raw.strip() and not readable(raw + b"\n"):
            return content.count(b"\n", 0, start) + offset + 1
    return None


def _train(args):
    import fastdual
    from fastdual.formats import save_liblinear
    if args.s not in LIBLINEAR_TYPES:
        raise _Failure(f"-s {args.s}: fastdual trains LIBLINEAR's types "
                       f"{sorted(LIBLINEAR_TYPES)}")
    loss, l1_ratio, multiclass = LIBLINEAR_TYPES[args.s]
    loss = args.loss or loss
    if loss == "squared" and args.p:
        raise _Failure(f"-s {args.s} -p {args.p}: fastdual's squared loss has no epsilon "
                       "(use -p 0, or -s 13 for the epsilon-insensitive loss)")
    X, y = _read_svmlight(args.training_set_file)
    options = dict(loss=loss, l1_ratio=args.l1_ratio if args.l1_ratio is not None else l1_ratio,
                   tol=args.tol if args.tol is not None else args.e,
                   max_epochs=args.max_epochs, solver=args.solver, random_state=args.seed,
                   fit_intercept=args.B >= 0, intercept_scaling=args.B if args.B > 0 else 1.0,
                   regularize_intercept=not args.free_intercept)
    if args.alpha is not None:
        options["alpha"] = args.alpha
    else:
        options["C"] = args.c
    if loss == "epsilon_insensitive":
        options["epsilon"] = args.p
    if multiclass and np.unique(y).shape[0] > 2:
        options["multiclass"] = multiclass
    elif loss == "logistic" and np.unique(y).shape[0] > 2:
        options["multiclass"] = "ovr"              # LIBLINEAR's -s 0, 6, 7: one-vs-rest
    if args.weights:
        options["class_weight"] = {label: weight for label, weight in args.weights}
    regression = LIBLINEAR_TYPES[args.s][0] in ("squared", "epsilon_insensitive") \
        and args.loss is None
    try:
        if args.v or args.find_C:
            return _cross_validate(args, X, y, options, regression)
        model = fastdual.train(X, y, n_jobs=args.threads, **options)
    except (ValueError, TypeError) as exc:
        raise _Failure(str(exc)) from None
    out = args.model_file or os.path.basename(args.training_set_file) + ".model"
    try:
        save_liblinear(model, out)
    except ValueError:
        model.save(out)                        # what LIBLINEAR's format cannot hold
    if not args.q:
        print(f"optimization finished, #iter = {model.n_epochs_}, relative duality gap = "
              f"{model.relative_gap_:.3g}")
    return 0


def _cross_validate(args, X, y, options, regression):
    """-v n (n-fold cross-validation) and -C (the C search), LIBLINEAR's output lines."""
    import fastdual
    import warnings
    folds = args.v or 5
    options = {k: v for k, v in options.items() if k != "random_state"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        if args.find_C:
            options.pop("C", None)
            options.pop("alpha", None)
            grid = [2.0 ** k for k in range(-10, 11)]
            result = fastdual.cross_validate(X, y, n_folds=folds, random_state=args.seed,
                                             Cs=grid, **options)
            if regression:
                best = float(np.min(result["mse"]))
                print(f"Best C = {result['best_C']:g} CV MSE = {best:g}")
            else:
                best = float(np.max(result["accuracy"]))
                print(f"Best C = {result['best_C']:g}  CV accuracy = {100.0 * best:g}%")
            return 0
        result = fastdual.cross_validate(X, y, n_folds=folds, random_state=args.seed, **options)
    if regression:
        print(f"Cross Validation Mean squared error = {result['mse']:g}")
    else:
        print(f"Cross Validation Accuracy = {100.0 * result['accuracy']:g}%")
    return 0


def _predict(args):
    import fastdual
    try:
        model = fastdual.load(args.model_file)
    except (OSError, ValueError) as exc:
        raise _Failure(str(exc)) from None
    X, y = _read_svmlight(args.test_file)
    d = model.coef_.shape[-1]
    # LIBLINEAR ignores features beyond the model's and treats missing ones as zero.
    X = X[:, :d] if X.shape[1] >= d else sp.hstack(
        [X, sp.csr_matrix((X.shape[0], d - X.shape[1]))]).tocsr()
    predicted = model.predict(X)
    with open(args.output_file, "w") as handle:
        if args.b:
            if model.loss != "logistic":
                raise _Failure("-b 1: probability estimates are for logistic models only")
            proba = model.predict_proba(X)
            handle.write("labels " + " ".join(str(_label(c)) for c in model.classes_) + "\n")
            for label, row in zip(predicted, proba):
                handle.write(f"{_label(label)} " + " ".join(f"{p:g}" for p in row) + "\n")
        else:
            handle.writelines(f"{_label(label)}\n" for label in predicted)
    if model.classes_ is None:
        mse = float(np.mean((predicted - y) ** 2))
        r = np.corrcoef(predicted, y)[0, 1] if np.std(predicted) > 0 and np.std(y) > 0 else 0.0
        print(f"Mean squared error = {mse:g} (regression)")
        print(f"Squared correlation coefficient = {r * r:g} (regression)")
    else:
        correct = int(np.sum(predicted.astype(np.float64) == y))
        print(f"Accuracy = {100.0 * correct / y.shape[0]:g}% ({correct}/{y.shape[0]})")
    return 0


def _label(value):
    value = value.item() if isinstance(value, np.generic) else value
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _pair(text):
    label, _, weight = text.partition("=")
    try:
        return int(label), float(weight)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LABEL=WEIGHT, got {text!r}") from None


def build_parser():
    from fastdual._defaults import DEFAULTS
    from fastdual.losses import LOSSES
    parser = argparse.ArgumentParser(
        prog="fastdual",
        description="Regularized linear models by dual coordinate methods, certified by their "
                    "duality gap.")
    sub = parser.add_subparsers(dest="command")
    demo = sub.add_parser("demo", help="train on an embedded real data set and print accuracy, "
                                       "gap and time")
    demo.add_argument("--loss", default=DEFAULTS["loss"],
                      choices=[name for name, spec in LOSSES.items()
                               if spec.task == "binary" and not spec.structured])
    demo.add_argument("-C", type=float, default=1.0, help="LIBLINEAR's C (default 1)")
    demo.add_argument("--tol", type=float, default=1e-4, help="relative duality gap (default 1e-4)")
    demo.add_argument("-v", "--verbose", action="store_true", help="one line per epoch")
    demo.set_defaults(handler=_demo)

    tr = sub.add_parser("train", help="LIBLINEAR's train: a LIBSVM file in, a model file out",
                        description="Train on a LIBSVM/svmlight file and write LIBLINEAR's text "
                                    "model (fastdual's .npz when LIBLINEAR's format cannot hold "
                                    "the model). -e is fastdual's relative duality gap.")
    tr.add_argument("-s", type=int, default=1, help="LIBLINEAR's type (default 1): 0 logistic, "
                    "1-2 squared hinge, 3 hinge, 4 Crammer-Singer, 5 l1 squared hinge, "
                    "6 l1 logistic, 7 logistic, 11-12 squared loss, 13 epsilon-insensitive")
    tr.add_argument("-c", type=float, default=1.0, help="C (default 1)")
    tr.add_argument("-p", type=float, default=0.1, help="epsilon of -s 13 (default 0.1)")
    tr.add_argument("-e", type=float, default=1e-4,
                    help="stop at this relative duality gap (default 1e-4)")
    tr.add_argument("-B", type=float, default=-1.0,
                    help="bias feature value; < 0: no intercept (default -1)")
    tr.add_argument("-w", dest="weights", type=_pair, action="append", metavar="LABEL=WEIGHT",
                    help="class weight: LIBLINEAR's -wi weight (e.g. -w1 5), or -w i=weight")
    tr.add_argument("-q", action="store_true", help="quiet")
    tr.add_argument("-v", type=int, default=0, metavar="n",
                    help="n-fold cross-validation: print the accuracy (or MSE), write no model")
    tr.add_argument("-C", dest="find_C", action="store_true",
                    help="find the C of best cross-validation accuracy over 2^-10 .. 2^10 "
                         "(warm-started; n folds from -v, default 5)")
    tr.add_argument("--solver", default="auto", help="fastdual's solver (default auto: chosen by the problem)")
    tr.add_argument("--loss", default=None, help="fastdual's loss, instead of -s's")
    tr.add_argument("--alpha", type=float, default=None, help="alpha instead of C")
    tr.add_argument("--l1-ratio", type=float, default=None)
    tr.add_argument("--free-intercept", action="store_true",
                    help="an unpenalised intercept (with -B)")
    tr.add_argument("--tol", type=float, default=None, help="the same as -e")
    tr.add_argument("--max-epochs", type=int, default=1000)
    tr.add_argument("--threads", type=int, default=None, help="one-vs-rest threads")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("training_set_file")
    tr.add_argument("model_file", nargs="?")
    tr.set_defaults(handler=_train)

    pr = sub.add_parser("predict", help="LIBLINEAR's predict: a LIBSVM file and a model in, "
                                        "labels out")
    pr.add_argument("-b", type=int, choices=[0, 1], default=0,
                    help="1: write probability estimates (logistic models)")
    pr.add_argument("-q", action="store_true", help="quiet")
    pr.add_argument("test_file")
    pr.add_argument("model_file")
    pr.add_argument("output_file")
    pr.set_defaults(handler=_predict)
    parser.add_argument("--version", action="version", version=f"fastdual {_version()}")
    return parser


def _version():
    from fastdual._version import __version__
    return __version__


def _liblinear_weights(argv):
    """LIBLINEAR writes a class weight as `-wLABEL WEIGHT` (`-w1 5 -w-1 0.5`): rewritten to
    this parser's `-wLABEL=WEIGHT` (one token, so a negative label is no option) first."""
    out, k = [], 0
    while k < len(argv):
        match = re.fullmatch(r"-w(-?\d+)", argv[k])
        if match and k + 1 < len(argv):
            out.append(f"-w{match.group(1)}={argv[k + 1]}")     # one token: -w-1=0.5
            k += 2
        else:
            out.append(argv[k])
            k += 1
    return out


def main(argv=None):
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(_liblinear_weights(argv))
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return 2
    try:
        return args.handler(args)
    except _Failure as exc:
        print(f"fastdual {args.command}: error: {exc}", file=sys.stderr)
        return 1


def train_main():
    """`fastdual-train`: the same as `fastdual train`."""
    return main(["train"] + sys.argv[1:])


def predict_main():
    """`fastdual-predict`: the same as `fastdual predict`."""
    return main(["predict"] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
