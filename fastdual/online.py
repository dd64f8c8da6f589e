"""Online and streaming training by regularized dual averaging (seed 003).

    stream = fastdual.OnlineRDA(loss="logistic", alpha=1e-4, l1_ratio=1.0, classes=[0, 1])
    for X_chunk, y_chunk in chunks:
        stream.partial_fit(X_chunk, y_chunk)
    model = stream.model()                 # a fastdual.Model
    stream.certify(X_val, y_val)           # its certificate on data of your choice
    stream.save("stream.npz"); stream = fastdual.OnlineRDA.load("stream.npz")

    stream = fastdual.train_stream(["part1.svm", "part2.svm"], loss="logistic", alpha=1e-4,
                                   max_epochs=3)
    model = stream.model()

Each sample is one RDA step (fastdual.solvers.rda) in the order given, so partial_fit over any
split of the rows into chunks is exactly one pass of train(solver="rda", shuffle=False) over
their concatenation (same bits). The state is O(n_features): a stream never holds more than one
chunk of data.
"""
import io
import os
import sys
import warnings

import numpy as np

from fastdual import _loop, _validation
from fastdual._api import duality_gap
from fastdual._core import gap as _gap
from fastdual._fit import Certificate
from fastdual._defaults import DEFAULTS
from fastdual._problem import describe_objective, map_strength
from fastdual.formats import load as load_model
from fastdual.losses import make_loss
from fastdual.model import Model
from fastdual.solvers.rda import RDAState, check_variant


class OnlineRDA:
    """RDA kept between chunks of data (`partial_fit`), for streams and data larger than memory.

    The objective is train's, P(w) = E_i [c_i loss(y_i, x_i . w + b)] + l2/2 ||w||^2 + l1 ||w||_1
    over the stream, with l2 = alpha (1 - l1_ratio), l1 = alpha l1_ratio; the defaults are
    train's (fastdual/_defaults.py: the loss, LIBLINEAR's regularised intercept; a free one with
    regularize_intercept=False, as in the seed's Sec. 6.1 and scikit-learn's SGDClassifier),
    but the strength is alpha: C's alpha = 1 / (C n) needs the size of the whole stream.
    variant, rda_gamma, rho, output: as train(solver="rda"). classes: the two
    labels of a binary loss (required: a chunk may hold one of them only). lipschitz: L of the
    accelerated variant (default: estimated from the first chunk, mean c_i ||x_i||^2 over the
    loss's smoothness). sample_weight in partial_fit multiplies each sample's gradient as given
    (train normalises weights to mean 1 over the data, which a stream cannot).
    """

    def __init__(self, loss=DEFAULTS["loss"], *, alpha=DEFAULTS["stream_alpha"], l1_ratio=0.0,
                 variant="basic", rda_gamma=None, rho=None, output="last", classes=None,
                 fit_intercept=True, intercept_scaling=1.0,
                 regularize_intercept=DEFAULTS["regularize_intercept"], lipschitz=None,
                 **loss_params):
        self.spec, self._loss, self.loss_params = make_loss(loss, loss_params)
        self.loss = self.spec.name
        self.alpha, self.l1_ratio = map_strength(alpha, None, l1_ratio, 1.0)
        self.classes = (_validation.check_classes(classes, self.loss)
                        if self.spec.task == "binary" else None)
        if self.spec.task == "regression" and classes is not None:
            raise ValueError(f"loss={self.loss!r} is a regression loss: it takes no classes")
        for name, value in (("fit_intercept", fit_intercept),
                            ("regularize_intercept", regularize_intercept)):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{name} must be True or False, got {value!r}")
        self.fit_intercept = bool(fit_intercept)
        self.intercept_scaling = _validation.check_positive("intercept_scaling",
                                                            intercept_scaling)
        self.regularize_intercept = bool(regularize_intercept)
        self.free_intercept = self.fit_intercept and not self.regularize_intercept
        self.l2 = self.alpha * (1.0 - self.l1_ratio)
        self.l1 = self.alpha * self.l1_ratio
        self.variant, self.output = variant, output
        self.gamma, self.rho = check_variant(variant, rda_gamma, rho, output, self.l2,
                                             self.free_intercept, self._loss.gamma > 0.0)
        if lipschitz is not None:
            lipschitz = _validation.check_positive("lipschitz", lipschitz)
        self.lipschitz = lipschitz
        self.state = None              # created by the first chunk (it fixes n_features)
        self.n_epochs_ = 0             # whole passes over the data (train_stream counts them)
        self.certificate_ = None       # train_stream's certificate pass, for the model it had
        self._certified_steps = -1

    @property
    def n_samples_seen_(self):
        """The rows stepped on so far: the state's own step count (one step per row), so that
        it stays exact whatever stops a chunk (a Ctrl-C during partial_fit lands after the
        kernel has run the whole chunk: n_samples_seen_ then counts it)."""
        return 0 if self.state is None else self.state.steps

    @property
    def bias(self):
        return self.intercept_scaling if self.fit_intercept else 0.0

    def __getstate__(self):
        """Picklable (pickle, copy.deepcopy, joblib): the loss (a compiled object) travels as its
        name and parameters and is rebuilt."""
        state = dict(self.__dict__)
        del state["_loss"]
        return state

    def __setstate__(self, state):
        state = dict(state)
        state.pop("n_samples_seen_", None)     # (a count kept beside the state, once)
        self.__dict__.update(state)
        self._loss = make_loss(self.loss, self.loss_params)[1]

    def partial_fit(self, X, y, sample_weight=None):
        """One RDA step per row of the chunk, in order. Every argument is checked before the
        state is touched: a bad chunk raises and leaves the stream as it was. The chunk runs in
        one pass of the kernel, which Ctrl-C does not cut: the KeyboardInterrupt comes after
        it, with the chunk trained on and counted in n_samples_seen_ (do not feed it again)."""
        n_features = None if self.state is None else self.state.n_features
        matrix = _validation.check_matrix(X, "X", n_features=n_features)
        targets = _validation.encode_targets(y, matrix.n_samples, self.spec.task, self.loss,
                                             self.classes)
        weights = _validation.check_stream_weights(sample_weight, matrix.n_samples)
        if self.state is None:
            lipschitz = 0.0
            if self.variant == "accelerated":
                lipschitz = self.lipschitz
                if lipschitz is None:
                    norms = matrix.squared_norms(self.bias)
                    lipschitz = float(np.mean(weights * norms)) / self._loss.gamma
                    lipschitz = lipschitz if lipschitz > 0 else 1.0
            self.state = RDAState(matrix.n_features, variant=self.variant, gamma=self.gamma,
                                  rho=self.rho, output=self.output, l1=self.l1, l2=self.l2,
                                  free_intercept=self.free_intercept, lipschitz=lipschitz)
        self.state.run(matrix, self.bias, targets, weights, self._loss,
                       np.arange(matrix.n_samples, dtype=np.intp))
        return self

    def _coefficients(self):
        if self.state is None:
            raise ValueError("the stream has seen no data yet: call partial_fit first")
        w = self.state.coefficients()
        return w[:-1], w[-1] * self.bias

    def certify(self, X, y, sample_weight=None):
        """The certificate (fastdual.Certificate) of the current model on the data given, for
        the stream's objective (duals from the model's margins, as for any model)."""
        coef, intercept = self._coefficients()
        return duality_gap(X, y, coef, intercept if self.fit_intercept else None,
                           loss=self.loss, alpha=self.alpha, l1_ratio=self.l1_ratio,
                           sample_weight=sample_weight, intercept_scaling=self.intercept_scaling,
                           regularize_intercept=self.regularize_intercept, **self.loss_params)

    def certify_chunks(self, chunks):
        """The certificate (fastdual.Certificate) of the current model on the rows of an
        iterable of (X, y) chunks, holding one chunk at a time: the certificate's block form
        (_core/gap.pyx block_sums per chunk, then combine), with each row's dual from its
        margin, -loss'(x_i . w), as duality_gap(..., refine_epochs=0) takes on the same rows
        loaded whole (sample weights 1). One pass with an l2 term; with pure l1 two (chunks a
        callable returning a fresh iterable, or a list): the first sums v(duals), whose largest
        entry scales the duals into the dual's feasible set, the second certifies the scaled
        duals. With a free intercept (whose dual constraint needs every dual at once), or pure
        l1 with a one-pass iterable, it returns None. Stores it as certificate_, which model()
        then reports."""
        if self.state is None:
            raise ValueError("the stream has seen no data yet: call partial_fit first")
        if self.free_intercept:
            return None
        if callable(chunks):
            read = chunks
        elif self.l2 > 0.0 or isinstance(chunks, (list, tuple)):
            read = lambda: chunks  # noqa: E731 - a re-readable collection, or one pass
        else:
            return None
        d = self.state.n_features
        w = self.state.coefficients()

        def block_pass(scale, v):
            """(loss, conjugate, Fenchel-Young sums, rows) over the chunks, the duals times
            scale; v += their share of X^T (c duals) (divided by l2 n_total: here by 1)."""
            loss_sum = conj_sum = fy_sum = 0.0
            n = 0
            for X, y in read():
                matrix = _validation.check_matrix(X, "X", n_features=d)
                targets = _validation.encode_targets(y, matrix.n_samples, self.spec.task,
                                                     self.loss, self.classes)
                margins = matrix.matvec(w[:d]) + self.bias * w[d]
                duals = self._loss.duals_from_margins(targets, margins)
                if scale != 1.0:
                    duals *= scale
                sums = _gap.block_sums(*matrix.kernel_args, matrix.n_samples, d, self.bias,
                                       targets, np.ones(matrix.n_samples), w, duals, 1.0, 1,
                                       self._loss, v)
                loss_sum, conj_sum, fy_sum = (loss_sum + sums[0], conj_sum + sums[1],
                                              fy_sum + sums[2])
                n += matrix.n_samples
            if n == 0:
                raise ValueError("the certificate pass read no rows")
            return loss_sum, conj_sum, fy_sum, n

        v = np.zeros(d + 1)
        if self.l2 > 0.0:
            loss_sum, conj_sum, fy_sum, n = block_pass(1.0, v)
            v *= 1.0 / (self.l2 * n)
            primal, dual, gap = _gap.combine(w, v, loss_sum, conj_sum, fy_sum, n, self.l2,
                                             self.l1)
        else:
            # Pure l1: D(a) = (1/n) sum_i -phi*(-a_i) on ||X^T a / n||_inf <= l1, so the margin
            # duals are scaled by min(1, l1 / ||v||_inf) (the gap function's rescaling), and
            # gap = FY sum / n + l1 ||w||_1 - w . v(scaled duals), each term >= 0.
            _, _, _, n = block_pass(1.0, v)
            largest = float(np.max(np.abs(v))) / n
            scale = 1.0 if largest <= self.l1 else self.l1 / largest
            v[:] = 0.0
            loss_sum, conj_sum, fy_sum, n = block_pass(scale, v)
            v *= 1.0 / n
            l1_norm = self.l1 * float(np.sum(np.abs(w)))
            primal = loss_sum / n + l1_norm
            dual = conj_sum / n
            gap = fy_sum / n + max(l1_norm - float(w @ v), 0.0)
        self.certificate_ = Certificate(gap, primal, dual, _loop.relative_gap(primal, dual, gap))
        self._certified_steps = self.state.steps
        return self.certificate_

    def model(self, X=None, y=None, sample_weight=None):
        """The current model as a fastdual.Model; with data (X, y) it carries the certificate
        on that data; else the certificate of certify_chunks (train_stream's last pass) if the
        stream has not moved since, or NaN primal_, dual_ and gap_ (nothing certified)."""
        coef, intercept = self._coefficients()
        primal = dual = gap = np.nan
        if X is not None:
            cert = self.certify(X, y, sample_weight)
            primal, dual, gap = cert.primal, cert.dual, cert.gap
        elif self.certificate_ is not None and self._certified_steps == self.state.steps:
            cert = self.certificate_
            primal, dual, gap = cert.primal, cert.dual, cert.gap
        return Model(
            coef.copy(), intercept if self.fit_intercept else 0.0, self.classes, solver="rda",
            l2_added_=0.0, primal_=float(primal), dual_=float(dual), gap_=float(gap),
            converged_=False, n_epochs_=self.n_epochs_, history_=[], tol=0.0,
            **describe_objective(self.loss, self.loss_params, self.spec.task, self.alpha,
                                 self.l1_ratio, self.fit_intercept, self.intercept_scaling,
                                 self.free_intercept, coef.shape[0]))

    # -- persistence: the Model format, with the RDA state beside the model ----------------------
    def save(self, path):
        """Write the current model and the stream's state (plain arrays, no pickle) to path;
        OnlineRDA.load(path) resumes the stream exactly where it was."""
        model = self.model()
        settings = dict(self.state.settings(), n_features=self.state.n_features,
                        n_samples_seen=self.n_samples_seen_, n_epochs=self.n_epochs_,
                        regularize_intercept=self.regularize_intercept)
        model.stream_ = {"settings": settings, "arrays": self.state.arrays()}
        model.save(path)

    @classmethod
    def load(cls, path):
        model = load_model(path)
        if model.stream_ is None:
            raise ValueError(f"cannot resume a stream from {os.fspath(path)!r}: it holds a model "
                             "without stream state (written by Model.save, not OnlineRDA.save)")
        settings = dict(model.stream_["settings"])
        expected = set(RDAState.SETTINGS) | {"n_features", "n_samples_seen",
                                             "regularize_intercept"}
        missing = sorted(expected - set(settings))
        extra = sorted(set(settings) - expected - {"n_epochs"})
        if missing or extra:
            raise ValueError(f"cannot resume a stream from {os.fspath(path)!r}: its state's "
                             f"settings are not a stream's (missing {missing}, unknown {extra})")
        n_features = settings.pop("n_features")
        if (isinstance(n_features, bool) or not isinstance(n_features, int)
                or n_features != model.coef_.shape[-1]):
            raise ValueError(f"cannot resume a stream from {os.fspath(path)!r}: its state's "
                             f"n_features {n_features!r} is not its model's "
                             f"{model.coef_.shape[-1]}")
        seen = settings.pop("n_samples_seen")
        epochs = settings.pop("n_epochs", 0)
        regularize_intercept = settings.pop("regularize_intercept")
        free = bool(model.fit_intercept) and regularize_intercept is False
        if not isinstance(settings["free_intercept"], bool) or settings["free_intercept"] != free:
            raise ValueError(f"cannot resume a stream from {os.fspath(path)!r}: its state's "
                             f"free_intercept {settings['free_intercept']!r} contradicts its "
                             f"intercept (fit_intercept={model.fit_intercept}, "
                             f"regularize_intercept={regularize_intercept!r})")
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 0:
            raise ValueError(f"cannot resume a stream from {os.fspath(path)!r}: its n_epochs "
                             f"{epochs!r} is not a count")
        stream = cls(model.loss, alpha=model.alpha, l1_ratio=model.l1_ratio,
                     variant=settings["variant"],
                     rda_gamma=(settings["gamma"] if settings["variant"] != "strongly_convex"
                                else None),
                     rho=settings["rho"] if settings["variant"] == "enhanced" else None,
                     output=settings["output"], classes=model.classes_,
                     fit_intercept=model.fit_intercept, intercept_scaling=model.intercept_scaling,
                     regularize_intercept=regularize_intercept,
                     lipschitz=settings["lipschitz"] or None, **model.loss_params)
        try:
            stream.state = RDAState.restore(n_features, settings, model.stream_["arrays"])
        except (TypeError, KeyError) as exc:
            raise ValueError(f"cannot resume a stream from {os.fspath(path)!r}: its state is "
                             f"incomplete ({exc})") from None
        if seen != stream.state.steps:
            raise ValueError(f"cannot resume a stream from {os.fspath(path)!r}: it says "
                             f"{seen!r} samples seen, its state took {stream.state.steps} steps")
        stream.n_epochs_ = epochs
        return stream


def _line_blocks(path, chunk_bytes):
    """The file's bytes in blocks of whole lines, each about chunk_bytes (a line longer than that
    is one block of its own): every line is in exactly one block."""
    with open(path, "rb") as handle:
        pending = []          # a line's beginning, not yet ended by a newline
        while True:
            block = handle.read(chunk_bytes)
            if not block:
                rest = b"".join(pending)
                if rest.strip():
                    yield rest
                return
            cut = block.rfind(b"\n")
            if cut < 0:
                pending.append(block)
                continue
            yield b"".join(pending) + block[:cut + 1]
            pending = [block[cut + 1:]]


def svmlight_chunks(paths, n_features, chunk_bytes, zero_based=False, dtype=np.float64):
    """(X, y) chunks of LIBSVM / svmlight files, blocks of whole lines of about chunk_bytes
    parsed with scikit-learn's reader, so that at most about chunk_bytes of text (or one longer
    line) is held at a time and every row is read once."""
    from sklearn.datasets import load_svmlight_file
    for path in paths:
        for block in _line_blocks(path, chunk_bytes):
            X, y = load_svmlight_file(io.BytesIO(block), n_features=n_features, dtype=dtype,
                                      zero_based=zero_based)
            if X.shape[0]:
                yield X, y


def _scan(paths, chunk_bytes, zero_based):
    """(n_features, labels) of svmlight files, by one bounded-memory pass."""
    from sklearn.datasets import load_svmlight_file
    n_features, labels = 0, set()
    for path in paths:
        for block in _line_blocks(path, chunk_bytes):
            # (the largest index any block may hold; then the largest actually read)
            X, y = load_svmlight_file(io.BytesIO(block), zero_based=zero_based,
                                      n_features=np.iinfo(np.int32).max)
            if X.nnz:
                n_features = max(n_features, int(X.indices.max()) + 1)
            if len(labels) <= 2:
                labels.update(np.unique(y).tolist())
    return n_features, sorted(labels)


def _progress(total, verbose):
    """A tqdm bar over `total` bytes when verbose and tqdm is installed; else a plain printer."""
    if not verbose:
        return None
    try:
        from tqdm import tqdm
        return tqdm(total=total, unit="B", unit_scale=True, desc="fastdual.train_stream")
    except ImportError:
        class Lines:
            def __init__(self):
                self.done = 0

            def update(self, n):
                self.done += n
                print(f"fastdual.train_stream: {self.done / max(total, 1):6.1%} of "
                      f"{total} bytes", file=sys.stderr, flush=True)

            def close(self):
                pass
        return Lines()


def train_stream(source, *, loss=DEFAULTS["loss"], alpha=DEFAULTS["stream_alpha"],
                 l1_ratio=0.0, max_epochs=1, n_features=None, classes=None,
                 chunk_bytes=1 << 24, zero_based=False, verbose=0, epochs=None, certify=None,
                 **options):
    """Train by RDA over data streamed from svmlight / LIBSVM files or from chunks.

    source: a path or a list of paths of svmlight files (plain text; read in byte ranges of
    chunk_bytes with scikit-learn's reader, never whole), or a callable returning a fresh
    iterable of (X, y) chunks for each pass (an iterable of chunks, for one pass). max_epochs:
    passes over the source, the rows in the order read (all of them: a stream has no
    certificate to stop on; `epochs` is its deprecated name). n_features and classes are read by a
    first pass over the files when not given. Other keywords go to fastdual.OnlineRDA. Memory:
    one chunk plus O(n_features). Returns the OnlineRDA stream (stream.model() for the model,
    whose n_epochs_ is the passes made).

    certify: one more pass over the source at the end computes the model's certificate on all
    its rows (OnlineRDA.certify_chunks: primal_, dual_, gap_ of stream.model() and
    stream.certificate_), in block form, one chunk at a time. Default (None): when the source
    can be read again (files or a callable); False skips it; True with a one-pass iterable is
    an error. Pure l1 reads the source twice for it (the duals' scaling, then the certificate).
    With a free intercept the model's certificate stays NaN (certify=True then raises).
    """
    if epochs is not None:
        warnings.warn("epochs is deprecated: max_epochs counts the passes over the source",
                      DeprecationWarning, stacklevel=2)
        max_epochs = epochs
    epochs = _validation.check_int("max_epochs", max_epochs, 1)
    chunk_bytes = _validation.check_int("chunk_bytes", chunk_bytes, 1)
    if certify is not None and not isinstance(certify, (bool, np.bool_)):
        raise TypeError(f"certify must be None, True or False, got {certify!r}")
    if isinstance(source, bytes):
        source = os.fsdecode(source)
    if isinstance(source, (str, os.PathLike)):
        source = [source]
    files = isinstance(source, (list, tuple)) and all(isinstance(p, (str, os.PathLike))
                                                      for p in source)
    if files:
        missing = [os.fspath(p) for p in source if not os.path.isfile(p)]
        if missing:
            raise FileNotFoundError(f"train_stream: no such file(s): {missing}")
        if n_features is None or (classes is None and make_loss(loss, {})[0].task == "binary"):
            scanned_features, labels = _scan(source, chunk_bytes, zero_based)
            n_features = scanned_features if n_features is None else n_features
            if classes is None and make_loss(loss, {})[0].task == "binary":
                if len(labels) != 2:
                    raise ValueError(f"the files hold {len(labels)} distinct labels "
                                     f"({labels[:5]}); a binary loss needs 2")
                classes = labels
        total = sum(os.path.getsize(p) for p in source)

        def passes():
            return svmlight_chunks(source, n_features, chunk_bytes, zero_based)
    elif callable(source):
        total = 0
        passes = source
    else:
        if certify:
            raise ValueError("certify=True needs a source that can be read again (paths, or a "
                             "callable returning a fresh iterable of chunks); an iterable of "
                             "chunks is read once")
        certify = False
        if epochs != 1:
            raise ValueError("an iterable of chunks can be read once: pass a callable that "
                             "returns a fresh iterable for each of the max_epochs passes")
        total = 0
        try:
            chunks = iter(source)
        except TypeError:
            raise TypeError("source must be a path, a list of paths, a callable returning an "
                            "iterable of (X, y) chunks, or such an iterable; got "
                            f"{type(source).__name__}") from None

        def passes():
            return chunks
    task = make_loss(loss, {})[0].task
    stream = OnlineRDA(loss, alpha=alpha, l1_ratio=l1_ratio,
                       classes=classes if task == "binary" else None, **options)
    if certify and stream.free_intercept:
        raise ValueError("certify=True: a stream's certificate needs no free intercept "
                         "(regularize_intercept=True or fit_intercept=False)")
    bar = _progress(total * epochs, verbose) if files else None
    try:
        for _ in range(epochs):
            done = 0
            for chunk in passes():
                if not (isinstance(chunk, (tuple, list)) and len(chunk) == 2):
                    raise TypeError("every chunk of the source must be a pair (X, y), got "
                                    f"{type(chunk).__name__}"
                                    + (f" of length {len(chunk)}" if hasattr(chunk, "__len__")
                                       else ""))
                X, y = chunk
                stream.partial_fit(X, y)
                if bar is not None:
                    step = min(chunk_bytes, total - done)
                    done += step
                    bar.update(step)
            if bar is not None and done < total:
                bar.update(total - done)
            stream.n_epochs_ += 1
    finally:
        if bar is not None:
            bar.close()
    if certify is not False and stream.state is not None:
        stream.certify_chunks(passes)
    return stream
