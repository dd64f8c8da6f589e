"""The `fastdual` command (also `python -m fastdual`): LIBLINEAR's `train` and `predict` where
they mean the same (docs/coming-from.md lists where they differ), and a demo.

Each command imports what it needs only: `predict` reads the model file and the data without the
training code (and without scikit-learn), so that it starts about as fast as numpy does.
"""
import argparse
import os
import re
import sys
import time
import warnings

import numpy as np


class _Failure(Exception):
    """A user error the command reports in one line (exit status 1)."""


def _demo(args):
    import fastdual
    from sklearn.datasets import load_breast_cancer

    if not (np.isfinite(args.C) and args.C > 0):
        raise _Failure(f"-C must be a positive number, got {args.C!r}")
    if not (np.isfinite(args.tol) and args.tol >= 0):
        raise _Failure(f"--tol must be a number >= 0, got {args.tol!r}")
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
    try:
        model = fastdual.train(X[train_idx], labels[train_idx], loss=args.loss, C=args.C,
                               tol=args.tol, random_state=0, verbose=args.verbose)
    except (ValueError, TypeError) as exc:
        raise _Failure(str(exc)) from None
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
                   11: ("squared_epsilon_insensitive", 0.0, None),
                   12: ("squared_epsilon_insensitive", 0.0, None),
                   13: ("epsilon_insensitive", 0.0, None)}
# LIBLINEAR's L2-loss SVR (-s 11, 12) is C sum max(0, |y - w x| - p)^2, fastdual's loss half
# that square: LIBLINEAR's C is fastdual's C / 2.
C_FACTOR = {11: 2.0, 12: 2.0}
INT_LIMIT = 2 ** 31          # LIBLINEAR's feature indices are C ints


# -- LIBSVM data files ---------------------------------------------------------------------------

def _read_libsvm(path, n_features=None):
    """(X, y) of a LIBSVM file (`label index:value ...`, 1-based ascending indices, `#` comments,
    an optional `qid:` ignored). With n_features, X has that many columns: the features above
    it are dropped (LIBLINEAR's predict ignores them). Plain files are read in one pass over
    their bytes (_core/text.pyx: parse_libsvm); the others, comments, qids and every file it
    refuses, by _parse_checked, which names the first line it cannot read. X is the validated
    rows that training, cross-validation (folds by Matrix.take_rows) and predict take
    (_validation.csr_rows, the checks of a scipy CSR X): the command line never imports
    scipy.sparse, about 0.15 s of a process."""
    from fastdual._core.text import parse_libsvm
    from fastdual._validation import csr_rows

    try:
        with open(path, "rb") as handle:
            content = handle.read()
    except OSError as exc:
        raise _Failure(f"cannot read {path!r}: {exc.strerror or exc}") from None
    parsed = parse_libsvm(content, INT_LIMIT)
    y, values, indices, indptr, d = (parsed if parsed is not None
                                     else _parse_checked(path, content))
    if n_features is not None and d > n_features:
        keep = indices < n_features
        row = np.repeat(np.arange(y.shape[0]), np.diff(indptr))
        kept = np.bincount(row[keep], minlength=y.shape[0])
        indptr = np.concatenate([[0], np.cumsum(kept)]).astype(np.int32)
        values, indices, d = values[keep], indices[keep], n_features
    try:
        return csr_rows(values, indices, indptr, max(d, n_features or 0)), y
    except (ValueError, TypeError) as exc:
        raise _Failure(str(exc)) from None


def _parse_checked(path, content):
    """(y, values, indices, indptr, n_features) of a LIBSVM file's bytes, in numpy alone, each
    line checked: a _Failure names the first line that is not `label index:value ...` with
    1-based strictly ascending indices and finite numbers (comments and a qid allowed)."""
    labels, counts, features = [], [], []
    for line in content.split(b"\n"):
        if b"#" in line:
            line = line[:line.index(b"#")]
        head = line.split(None, 1)          # the label, and the pairs as they stand
        if not head:
            continue
        rest = head[1] if len(head) > 1 else b""
        if rest.startswith(b"qid:"):
            rest = (rest.split(None, 1) + [b""])[1]       # the qid token dropped
        labels.append(head[0])
        counts.append(rest.count(b":"))
        features.append(rest)
    if not labels:
        raise _Failure(f"{path!r} holds no samples")
    pairs = b" ".join(features)
    n_pairs = int(np.sum(counts))
    # Each row's pairs are its colons: that holds when every token has exactly one colon,
    # i.e. when there are as many tokens as colons and none has two.
    if _tokens(pairs) != n_pairs or _TWO_COLONS.search(pairs):
        raise _Failure(_first_bad_line(path, content))
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # numpy warns (for now) where it stops reading
        try:
            y = np.fromstring(b" ".join(labels).decode("ascii"), sep=" ")
            numbers = (np.fromstring(pairs.replace(b":", b" ").decode("ascii"), sep=" ")
                       if n_pairs else np.empty(0))
        except (ValueError, UnicodeDecodeError, DeprecationWarning):
            y = numbers = None
    if y is None or y.shape[0] != len(labels) or numbers.shape[0] != 2 * n_pairs \
            or pairs.count(b":") != n_pairs:
        raise _Failure(_first_bad_line(path, content))
    index, values = numbers[0::2], numbers[1::2]
    row = np.repeat(np.arange(len(labels)), counts)
    starts = np.concatenate([[True], row[1:] != row[:-1]]) if n_pairs else np.empty(0, bool)
    bad = ((index != np.floor(index)) | (index < 1) | (index >= INT_LIMIT)
           | ~np.isfinite(values) | (~starts & (np.diff(index, prepend=0.0) <= 0)))
    bad_rows = np.unique(row[bad]) if n_pairs else np.empty(0, int)
    if bad_rows.shape[0] or not np.all(np.isfinite(y)):
        raise _Failure(_first_bad_line(path, content))
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    d = int(index.max()) if n_pairs else 0
    return y, values, (index - 1).astype(np.int32), indptr, d


_TWO_COLONS = re.compile(rb":[^\s]*:")


def _tokens(text):
    """The number of whitespace-separated tokens of a bytes text, counted by numpy."""
    if not text:
        return 0
    byte = np.frombuffer(text, dtype=np.uint8)
    space = (byte == 32) | ((byte >= 9) & (byte <= 13))
    return int(np.count_nonzero(~space[1:] & space[:-1])) + int(not space[0])


def _first_bad_line(path, content):
    """The message for the first line _read_libsvm refuses, found line by line."""
    for number, line in enumerate(content.split(b"\n"), start=1):
        if b"#" in line:
            line = line[:line.index(b"#")]
        reason = _line_error(line.split())
        if reason:
            return f"cannot read {path!r} line {number}: {reason}"
    return f"cannot read {path!r}: not a LIBSVM data file"


def _line_error(tokens):
    """Why a LIBSVM line's tokens are not `label index:value ...`, or None."""
    if not tokens:
        return None
    if len(tokens) > 1 and tokens[1].startswith(b"qid:"):
        del tokens[1]
    try:
        text = [token.decode("ascii") for token in tokens]
    except UnicodeDecodeError:
        return "it holds bytes that are not ASCII text"
    try:
        label = float(text[0])
    except ValueError:
        return f"the label {text[0][:20]!r} is not a number"
    if not np.isfinite(label):
        return f"the label {text[0]!r} is not a finite number"
    previous = 0
    for token in text[1:]:
        index, colon, value = token.partition(":")
        try:
            index, value = int(index), float(value)
        except ValueError:
            return f"{token[:30]!r} is not index:value (an integer index, a number)"
        if not colon:
            return f"{token[:30]!r} is not index:value"
        if not 1 <= index < INT_LIMIT:
            return (f"feature index {index} is outside LIBLINEAR's range 1 .. {INT_LIMIT - 1} "
                    "(1-based C ints)")
        if index <= previous:
            return f"feature index {index} after {previous}: indices must be ascending"
        if not np.isfinite(value):
            return f"feature {index} has the value {value}, not a finite number"
        previous = index
    return None


# -- train ----------------------------------------------------------------------------------------

def _train(args):
    if args.s == 21:
        raise _Failure("-s 21 (LIBLINEAR's one-class SVM, with -n nu) is not in fastdual, "
                       f"which trains LIBLINEAR's types {sorted(LIBLINEAR_TYPES)}")
    if args.s not in LIBLINEAR_TYPES:
        raise _Failure(f"-s {args.s}: fastdual trains LIBLINEAR's types "
                       f"{sorted(LIBLINEAR_TYPES)}")
    if args.v == 1 or args.v < 0:
        raise _Failure(f"-v {args.v}: n-fold cross validation needs n >= 2")
    if args.find_C and args.alpha is not None:
        raise _Failure("-C searches C; it takes no --alpha")
    import fastdual
    from fastdual.losses import get_loss_spec

    X, y = _read_libsvm(args.training_set_file)
    loss, l1_ratio, multiclass = LIBLINEAR_TYPES[args.s]
    factor = 1.0
    if args.loss is not None:
        loss = args.loss
    elif loss == "squared_epsilon_insensitive":
        factor = C_FACTOR[args.s]
        if args.p == 0:
            loss = "squared"                      # the same objective, its closed-form step
    try:
        spec = get_loss_spec(loss)
    except ValueError as exc:
        raise _Failure(f"--loss: {exc}") from None
    regression = spec.task == "regression"
    options = dict(loss=loss, l1_ratio=args.l1_ratio if args.l1_ratio is not None else l1_ratio,
                   tol=args.tol if args.tol is not None else args.e,
                   max_epochs=args.max_epochs, solver=args.solver, random_state=args.seed,
                   fit_intercept=args.B > 0, intercept_scaling=args.B if args.B > 0 else 1.0,
                   regularize_intercept=not args.free_intercept)
    if "epsilon" in spec.params:
        options["epsilon"] = 0.1 if args.p is None else args.p
    k = 0 if regression else np.unique(y).shape[0]
    if multiclass and k > 2:
        options["multiclass"] = multiclass
    elif loss == "logistic" and k > 2:
        options["multiclass"] = "ovr"              # LIBLINEAR's -s 0, 6, 7: one-vs-rest
    if args.weights:
        if regression:
            raise _Failure(f"-w: class weights are for classification; loss={loss!r} is "
                           "regression")
        present = set(np.unique(y).tolist())
        for label, _ in args.weights:
            if label not in present:
                print(f"WARNING: class label {label} specified in weight is not found",
                      file=sys.stderr)
        options["class_weight"] = {label: weight for label, weight in args.weights
                                   if label in present}
    if args.alpha is not None:
        options["alpha"] = args.alpha
    elif not args.find_C:
        options["C"] = factor * (1.0 if args.c is None else args.c)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if args.find_C:
            _find_parameters(args, X, y, options, regression, factor)
        elif args.v:
            _cross_validation(args, X, y, options, regression)
        else:
            try:
                model = fastdual.train(X, y, n_jobs=args.threads, **options)
            except (ValueError, TypeError) as exc:
                raise _Failure(str(exc)) from None
    if args.find_C or args.v:
        # (LIBLINEAR says nothing of the trainings inside cross-validation)
        caught = [w for w in caught if not issubclass(w.category, fastdual.ConvergenceWarning)]
        if not args.q:
            _warning_lines(caught)
        return 0
    if not regression:
        model.liblinear_labels_ = _label_order(y)
    out = args.model_file or os.path.basename(args.training_set_file) + ".model"
    _save(model, out)
    if not args.q:
        _end_lines(model, caught, options["tol"], fastdual.ConvergenceWarning)
    return 0


def _warning_lines(caught):
    for record in caught:
        print(f"WARNING: {record.message}")


def _label_order(y):
    """LIBLINEAR's order of the labels (its model file's label line): first appearance in the
    data, but +1 before -1 for two classes -1 and +1."""
    labels, first = np.unique(y, return_index=True)
    order = [int(v) if float(v).is_integer() else float(v) for v in labels[np.argsort(first)]]
    return [1, -1] if order == [-1, 1] else order


def _save(model, out):
    """LIBLINEAR's text model file, or fastdual's .npz when that format cannot hold the model."""
    from fastdual.formats import save_liblinear
    try:
        try:
            save_liblinear(model, out)
        except ValueError:
            model.save(out)                    # what LIBLINEAR's format cannot hold
    except OSError as exc:
        raise _Failure(f"cannot write the model file {out!r}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise _Failure(str(exc)) from None


def _end_lines(model, caught, tol, convergence_warning):
    """fastdual's last line, as LIBLINEAR's: "optimization finished" for a model certified at
    -e, LIBLINEAR's WARNING line otherwise; other warnings as WARNING lines."""
    unconverged = sum(issubclass(w.category, convergence_warning) for w in caught)
    _warning_lines([w for w in caught if not issubclass(w.category, convergence_warning)])
    if model.converged_:
        print(f"optimization finished, #iter = {model.n_epochs_}, relative duality gap = "
              f"{model.relative_gap_:.3g}")
        return
    where = ""
    if np.ndim(model.coef_) == 2 and model.multiclass == "ovr":
        where = f" in {unconverged} of {model.coef_.shape[0]} one-vs-rest problems"
    print(f"WARNING: reaching max number of iterations{where}, #iter = {model.n_epochs_}, "
          f"relative duality gap = {model.relative_gap_:.3g} > -e {tol:g} (more --max-epochs, "
          "a smaller -c, or scaled features help)")


def _folds(n, n_folds, seed):
    order = np.random.default_rng(seed).permutation(n)
    return [np.sort(order[k::n_folds]) for k in range(n_folds)]


def _check_folds(n_folds, n):
    if n_folds > n:
        print("WARNING: # folds > # data. Will use # folds = # data instead (i.e., leave-one-out "
              "cross validation)", file=sys.stderr)
        return n
    return n_folds


def _cross_validation(args, X, y, options, regression):
    """-v n: n-fold cross-validation with LIBLINEAR's output lines."""
    import fastdual
    n = X.n_samples
    folds = _folds(n, _check_folds(args.v, n), args.seed)
    target = np.empty(n)
    for test in folds:
        keep = np.ones(n, dtype=bool)
        keep[test] = False
        try:
            model = fastdual.train(X.take_rows(np.flatnonzero(keep)), y[keep], **options)
        except (ValueError, TypeError) as exc:
            raise _Failure(str(exc)) from None
        target[test] = model.predict(X.take_rows(test))
    if regression:
        print(f"Cross Validation Mean squared error = {np.mean((target - y) ** 2):g}")
        print(f"Cross Validation Squared correlation coefficient = "
              f"{_squared_correlation(target, y):g}")
    else:
        print(f"Cross Validation Accuracy = {100.0 * np.mean(target == y):g}%")
    return 0


def _squared_correlation(v, y):
    """LIBLINEAR's squared correlation coefficient of predictions v and targets y."""
    n = v.shape[0]
    with np.errstate(all="ignore"):
        top = n * np.dot(v, y) - v.sum() * y.sum()
        return float(top * top / ((n * np.dot(v, v) - v.sum() ** 2)
                                  * (n * np.dot(y, y) - y.sum() ** 2)))


def _find_parameters(args, X, y, options, regression, factor):
    """-C: LIBLINEAR's parameter search. C from LIBLINEAR's starting value (or -c), doubled up
    to 1024 (2^20 for -s 11/12, at each p of max|y| k/20, k = 19 .. 0, or from -p down), each
    fold warm-started from the previous C; a C at which the folds' previous models are still
    within -e of the optimum counts as unchanged, and 5 of them in a row end the search.
    LIBLINEAR's lines, C as LIBLINEAR's."""
    n = X.n_samples
    n_folds = _check_folds(args.v or 5, n)
    folds = _folds(n, n_folds, args.seed)
    print(f"Doing parameter search with {n_folds}-fold cross validation.")
    svr = factor != 1.0
    bias = args.B
    if svr:
        max_p = float(np.max(np.abs(y)))
        steps = 20
        top = steps - 1
        if args.p is not None and args.p > 0 and max_p > 0:
            top = min(int(args.p / (max_p / steps)), top)
        best = (np.inf, None, None)
        for k in range(top, -1, -1):
            p = k * max_p / steps
            local = dict(options, loss="squared_epsilon_insensitive" if p > 0 else "squared")
            local.pop("epsilon", None)
            if p > 0:
                local["epsilon"] = p
            start = args.c if args.c is not None else _start_C(X, y, "svr", bias, p)
            score, C = _search_C(args, X, y, folds, local, regression, factor, start,
                                 2.0 ** 20, p)
            if C is not None and score < best[0]:
                best = (score, C, p)
        score, C, p = best
        print(f"Best C = {C:g} Best p = {p:g}  CV MSE = {score:g}")
        return 0
    family = ("squared_hinge" if options["loss"] == "squared_hinge" else "other")
    start = args.c if args.c is not None else _start_C(X, y, family, bias, None)
    score, C = _search_C(args, X, y, folds, options, regression, factor, start, 1024.0, None)
    if regression:
        print(f"Best C = {C:g}  CV MSE = {score:g}")
    else:
        print(f"Best C = {C:g}  CV accuracy = {100.0 * score:g}%")
    return 0


def _start_C(X, y, family, bias, p):
    """LIBLINEAR's calc_start_C: a power of 2 below which the models hardly change (-s 2's rule
    for the squared hinge, -s 11's for the L2-loss SVR, -s 0's for the other types)."""
    try:
        squares = X.squared_norms(bias if bias >= 0 else 0.0)     # ||x_i||^2 + bias^2
    except ValueError as exc:                                    # (norms that overflow)
        raise _Failure(str(exc)) from None
    max_xx, n = float(np.max(squares)), X.n_samples
    with np.errstate(divide="ignore"):
        if family == "svr":
            excess = np.maximum(np.abs(y) - p, 0.0)
            loss, sum_y = float(np.dot(excess, excess)), float(np.sum(np.abs(y)))
            low = 0.01 * loss / (8 * sum_y * sum_y * max_xx) if loss > 0 else np.inf
        else:
            low = 1.0 / ((2 if family == "squared_hinge" else 1) * n * max_xx)
    if not 0 < low < np.inf:
        return low if low == np.inf else 1.0
    return float(2.0 ** np.floor(np.log2(low)))


def _search_C(args, X, y, folds, options, regression, factor, start, max_C, p):
    """One warm-started path of C (LIBLINEAR's find_parameter_C): (best score, its C)."""
    import fastdual
    from fastdual.solvers import takes_warm_start
    n = X.n_samples
    models = [None] * len(folds)
    best_score, best_C = (np.inf if regression else 0.0), None
    C = min(start, max_C)
    unchanged = 0
    weights = options.get("class_weight")
    while C <= max_C:
        target = np.empty(n)
        changed = False
        for f, test in enumerate(folds):
            keep = np.ones(n, dtype=bool)
            keep[test] = False
            X_fold, y_fold = X.take_rows(np.flatnonzero(keep)), y[keep]
            previous = models[f]
            if previous is None or not _still_optimal(previous, X_fold, y_fold, factor * C,
                                                      options["tol"], weights):
                warm = previous if previous is not None and \
                    takes_warm_start(previous.solver) else None
                try:
                    models[f] = fastdual.train(X_fold, y_fold, C=factor * C,
                                               warm_start=warm, **options)
                except (ValueError, TypeError) as exc:
                    raise _Failure(str(exc)) from None
                changed = changed or previous is not None
            target[test] = models[f].predict(X.take_rows(test))
        if regression:
            score = float(np.mean((target - y) ** 2))
            if score < best_score:
                best_score, best_C = score, C
            line = f"log2c={np.log2(C):7.2f}\tp={p if p is not None else 0.0:7.2f}\t" \
                   f"Mean squared error={score:g}"
        else:
            score = float(np.mean(target == y))
            if score > best_score:
                best_score, best_C = score, C
            line = f"log2c={np.log2(C):7.2f}\trate={100.0 * score:g}"
        if best_C is None:
            best_C = C
        if not args.q:
            print(line)
        unchanged = 0 if changed else unchanged + 1
        if unchanged == 5:
            break
        C *= 2.0
    if C > max_C and not args.q:
        print("WARNING: maximum C reached.")
    return best_score, best_C


def _still_optimal(model, X, y, C, tol, class_weight):
    """Whether the model is within the relative gap tol of the optimum at C, certified by the
    duals of its margins (exact at the optimum of a smooth loss; for the hinge-type losses the
    test fails more often than not, and the C is trained)."""
    import fastdual
    weights = None
    if class_weight:
        weights = np.array([class_weight.get(label, 1.0) for label in y.tolist()])
    try:
        return fastdual.duality_gap(X, y, model, C=C, sample_weight=weights,
                                    refine_epochs=0).relative_gap <= tol
    except ValueError:
        return False


# -- predict --------------------------------------------------------------------------------------

def _predict(args):
    from fastdual.formats import liblinear_labels, load
    try:
        model = load(args.model_file)
    except (OSError, ValueError) as exc:
        raise _Failure(str(exc)) from None
    regression = model.classes_ is None
    if not regression and model.classes_.dtype.kind not in "iuf":
        raise _Failure(f"the model's classes are not numbers ({model.classes_.tolist()[:3]}); "
                       "a LIBSVM file's labels are")
    if args.b and model.loss != "logistic":
        raise _Failure("probability output is only supported for logistic regression "
                       f"(-s 0, 6, 7); this model's loss is {model.loss!r}")
    X, y = _read_libsvm(args.test_file, n_features=model.coef_.shape[-1])
    if args.b:
        labels = liblinear_labels(model)
        columns = [int(np.flatnonzero(model.classes_ == label)[0]) for label in labels]
        proba = model.predict_proba(X)[:, columns]
    predicted = model.predict(X)
    try:
        with open(args.output_file, "w") as handle:
            if args.b:
                handle.write("labels" + "".join(f" {label}" for label in labels) + "\n")
                handle.writelines(f"{float(label):g}" + "".join(f" {p:g}" for p in row) + "\n"
                                  for label, row in zip(predicted, proba))
            else:
                handle.writelines(f"{float(label):.17g}\n" for label in predicted)
    except OSError as exc:
        raise _Failure(f"cannot write {args.output_file!r}: {exc.strerror or exc}") from None
    if args.q:
        return 0
    if regression:
        print(f"Mean squared error = {np.mean((predicted - y) ** 2):g} (regression)")
        print(f"Squared correlation coefficient = {_squared_correlation(predicted, y):g} "
              "(regression)")
    else:
        correct = int(np.sum(predicted.astype(np.float64) == y))
        print(f"Accuracy = {100.0 * correct / y.shape[0]:g}% ({correct}/{y.shape[0]})")
    return 0


# -- the parser -----------------------------------------------------------------------------------

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
                    "6 l1 logistic, 7 logistic, 11-12 L2-loss SVR (squared epsilon-insensitive), "
                    "13 L1-loss SVR (epsilon-insensitive); LIBLINEAR's 21 is refused")
    tr.add_argument("-c", type=float, default=None, help="C (default 1; as LIBLINEAR's)")
    tr.add_argument("-p", type=float, default=None,
                    help="epsilon of -s 11, 12, 13 (default 0.1)")
    tr.add_argument("-n", type=float, default=None, metavar="nu",
                    help="nu of LIBLINEAR's -s 21 (one-class SVM), which fastdual has not")
    tr.add_argument("-e", type=float, default=1e-4,
                    help="stop at this relative duality gap (default 1e-4)")
    tr.add_argument("-B", type=float, default=-1.0,
                    help="bias feature value; <= 0: no intercept (default -1)")
    tr.add_argument("-R", "--free-intercept", dest="free_intercept", action="store_true",
                    help="an unpenalised intercept (with -B 1)")
    tr.add_argument("-w", dest="weights", type=_pair, action="append", metavar="LABEL=WEIGHT",
                    help="class weight: LIBLINEAR's -wi weight (e.g. -w1 5), or -w i=weight")
    tr.add_argument("-q", action="store_true", help="quiet: no output lines, no warnings")
    tr.add_argument("-v", type=int, default=0, metavar="n",
                    help="n-fold cross-validation: print the accuracy (or MSE), write no model")
    tr.add_argument("-C", dest="find_C", action="store_true",
                    help="LIBLINEAR's search for C (and p for -s 11, 12) by cross-validation "
                         "(n folds from -v, default 5); -c, -p: where it starts")
    tr.add_argument("--solver", default="auto", help="fastdual's solver (default auto: chosen by the problem)")
    tr.add_argument("--loss", default=None, help="fastdual's loss, instead of -s's")
    tr.add_argument("--alpha", type=float, default=None, help="alpha instead of C")
    tr.add_argument("--l1-ratio", type=float, default=None)
    tr.add_argument("--tol", type=float, default=None, help="the same as -e")
    tr.add_argument("--max-epochs", type=int, default=1000)
    tr.add_argument("--threads", type=int, default=None, help="threads: one-vs-rest classes in parallel, or SDCA's epochs on one problem (n_jobs)")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("training_set_file")
    tr.add_argument("model_file", nargs="?")
    tr.set_defaults(handler=_train)

    pr = sub.add_parser("predict", help="LIBLINEAR's predict: a LIBSVM file and a model in, "
                                        "labels out")
    pr.add_argument("-b", type=int, choices=[0, 1], default=0,
                    help="1: write probability estimates (logistic models)")
    pr.add_argument("-q", action="store_true", help="quiet: no accuracy lines")
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
    except KeyboardInterrupt:
        print(f"fastdual {args.command}: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print(f"fastdual {args.command}: error: not enough memory (the largest feature index "
              "sets the number of features)", file=sys.stderr)
        return 1
    except BrokenPipeError:           # `fastdual train -C ... | head`: stop as a C program does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def train_main():
    """`fastdual-train`: the same as `fastdual train`."""
    return main(["train"] + sys.argv[1:])


def predict_main():
    """`fastdual-predict`: the same as `fastdual predict`."""
    return main(["predict"] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
