"""fastdual.OnlineRDA and fastdual.train_stream: chunks are exactly one pass of the batch solver,
bad chunks leave the stream untouched, a saved stream resumes, files stream in bounded memory."""
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings, strategies as st
from sklearn.datasets import dump_svmlight_file

import fastdual
from conftest import problem_for

VARIANTS = [dict(variant="basic"), dict(variant="basic", output="average"),
            dict(variant="enhanced", rho=0.5), dict(variant="strongly_convex"),
            dict(variant="accelerated", lipschitz=3.0)]


def one_pass(X, y, loss, options, **objective):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastdual.ConvergenceWarning)
        return fastdual.train(X, y, loss=loss, solver="rda", max_epochs=1, tol=0.0,
                              shuffle=False, **objective, **options)


@settings(max_examples=25, deadline=None)
@given(options=st.sampled_from(VARIANTS), cuts=st.lists(st.integers(1, 299), max_size=8),
       sparse=st.booleans(), regularize_intercept=st.booleans(), seed=st.integers(0, 100))
def test_partial_fit_over_any_split_is_one_pass_of_train_to_the_last_bit(
        options, cuts, sparse, regularize_intercept, seed):
    # (strongly_convex has no proximal term for a free intercept: refused, test_bad_input)
    assume(options["variant"] != "strongly_convex" or regularize_intercept)
    loss = "logistic"
    X, y = problem_for(loss, n=300, d=8, seed=seed, sparse=sparse)
    labels = np.where(y > 0, "spam", "ham")
    objective = dict(alpha=1e-3, l1_ratio=0.3, regularize_intercept=regularize_intercept)
    model = one_pass(X, labels, loss, options, **objective)
    stream = fastdual.OnlineRDA(loss, classes=["ham", "spam"], **objective, **options)
    bounds = [0] + sorted(set(cuts)) + [300]
    for start, stop in zip(bounds[:-1], bounds[1:]):
        stream.partial_fit(X[start:stop], labels[start:stop])
    online = stream.model()
    assert np.array_equal(online.coef_, model.coef_)
    assert online.intercept_ == model.intercept_
    assert stream.n_samples_seen_ == 300
    assert online.intercept_mode == model.intercept_mode
    np.testing.assert_array_equal(online.predict(X), model.predict(X))


def test_chunks_may_be_csr_or_dense_float32_or_float64():
    X, y = problem_for("squared", n=200, d=6, seed=1, sparse=True)
    reference = fastdual.OnlineRDA("squared", alpha=1e-2).partial_fit(X, y).model()
    stream = fastdual.OnlineRDA("squared", alpha=1e-2)
    stream.partial_fit(X[:50], y[:50])
    stream.partial_fit(X[50:100].toarray(), y[50:100])
    stream.partial_fit(X[100:150].astype(np.float32), y[100:150])
    stream.partial_fit(X[150:].toarray().astype(np.float32), y[150:])
    # The float32 chunks are the float64 values rounded: equal to float32 precision.
    np.testing.assert_allclose(stream.model().coef_, reference.coef_, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("bad, match", [
    (lambda X, y: (X, np.where(y > 0, "spam", "eggs")), r"labels outside classes"),
    (lambda X, y: (X[:, :5], np.where(y > 0, "spam", "ham")), r"features"),
    (lambda X, y: (np.where(np.arange(8) == 3, np.nan, X), np.where(y > 0, "spam", "ham")),
     r"NaN"),
    (lambda X, y: (X, np.where(y > 0, "spam", "ham")[:-1]), r"entries"),
])
def test_a_bad_chunk_is_a_clear_error_and_leaves_the_stream_untouched(bad, match):
    X, y = problem_for("logistic", n=60, d=8, seed=4)
    stream = fastdual.OnlineRDA("logistic", alpha=1e-3, classes=["ham", "spam"],
                                output="average")
    stream.partial_fit(X[:30], np.where(y[:30] > 0, "spam", "ham"))
    before = {k: v.copy() for k, v in stream.state.arrays().items()}
    X_bad, y_bad = bad(X[30:], y[30:])
    with pytest.raises(ValueError, match=match):
        stream.partial_fit(X_bad, y_bad)
    for name, value in stream.state.arrays().items():
        np.testing.assert_array_equal(value, before[name])
    assert stream.n_samples_seen_ == 30


def test_binary_streams_need_their_classes_and_regression_streams_none():
    with pytest.raises(ValueError, match=r"classes=\[...\] .* is required"):
        fastdual.OnlineRDA("hinge")
    with pytest.raises(ValueError, match=r"takes no classes"):
        fastdual.OnlineRDA("squared", classes=[0, 1])
    with pytest.raises(ValueError, match=r"exactly 2 distinct labels"):
        fastdual.OnlineRDA("hinge", classes=[1, 1])
    with pytest.raises(ValueError, match=r"seen no data"):
        fastdual.OnlineRDA("squared").model()


@pytest.mark.parametrize("options", VARIANTS)
def test_a_saved_stream_resumes_exactly(tmp_path, options):
    X, y = problem_for("logistic", n=120, d=7, seed=6, sparse=True)
    stream = fastdual.OnlineRDA("logistic", alpha=1e-3, l1_ratio=0.5, classes=[-1, 1],
                                regularize_intercept=options["variant"] == "strongly_convex",
                                **options)
    stream.partial_fit(X[:70], y[:70])
    stream.save(tmp_path / "stream.npz")
    resumed = fastdual.OnlineRDA.load(tmp_path / "stream.npz")
    stream.partial_fit(X[70:], y[70:])
    resumed.partial_fit(X[70:], y[70:])
    assert np.array_equal(resumed.model().coef_, stream.model().coef_)
    assert resumed.model().intercept_ == stream.model().intercept_
    assert resumed.n_samples_seen_ == 120
    # The file is a model file like any other, its state beside it.
    model = fastdual.load(tmp_path / "stream.npz")
    assert model.solver == "rda" and model.stream_ is not None


def test_resuming_from_a_file_without_stream_state_is_refused(tmp_path):
    X, y = problem_for("logistic", n=50, d=4, seed=0)
    fastdual.train(X, y, loss="logistic").save(tmp_path / "model.npz")
    with pytest.raises(ValueError, match=r"without stream state"):
        fastdual.OnlineRDA.load(tmp_path / "model.npz")


def test_the_streams_certificate_is_the_shared_one():
    X, y = problem_for("logistic", n=200, d=5, seed=9)
    stream = fastdual.OnlineRDA("logistic", alpha=1e-2, classes=[-1, 1], rda_gamma=0.3,
                                regularize_intercept=False)
    for _ in range(30):
        stream.partial_fit(X, y)
    cert = stream.certify(X, y)
    model = stream.model(X, y)
    expected = fastdual.duality_gap(X, y, model.coef_, model.intercept_, loss="logistic",
                                    alpha=1e-2, regularize_intercept=False)
    assert (cert.primal, cert.dual) == (expected.primal, expected.dual)
    assert (model.primal_, model.dual_) == (cert.primal, cert.dual)
    assert 0.0 <= cert.relative_gap < 5e-2          # thirty passes reach a small gap


def write_svmlight(path, X, y):
    dump_svmlight_file(X, y, str(path), zero_based=False)


def test_train_stream_over_files_equals_the_same_rows_in_memory(tmp_path):
    X, y = problem_for("logistic", n=400, d=30, seed=2, sparse=True)
    write_svmlight(tmp_path / "a.svm", X[:250], y[:250])
    write_svmlight(tmp_path / "b.svm", X[250:], y[250:])
    stream = fastdual.train_stream([tmp_path / "a.svm", tmp_path / "b.svm"], loss="logistic",
                                   alpha=1e-3, l1_ratio=0.5, max_epochs=3, chunk_bytes=2000)
    # The same rows read whole (the text holds 16 significant digits, so not X's own bits).
    from sklearn.datasets import load_svmlight_files
    X_a, y_a, X_b, y_b = load_svmlight_files([str(tmp_path / "a.svm"), str(tmp_path / "b.svm")],
                                             n_features=30, zero_based=False)
    reference = fastdual.OnlineRDA("logistic", alpha=1e-3, l1_ratio=0.5, classes=[-1, 1])
    for _ in range(3):
        reference.partial_fit(X_a, y_a).partial_fit(X_b, y_b)
    assert np.array_equal(stream.model().coef_, reference.model().coef_)
    assert stream.n_samples_seen_ == 1200


def test_train_stream_takes_a_callable_of_chunks_and_refuses_to_reread_an_iterator():
    X, y = problem_for("squared", n=100, d=5, seed=3)
    chunks = lambda: ((X[k:k + 30], y[k:k + 30]) for k in range(0, 100, 30))  # noqa: E731
    stream = fastdual.train_stream(chunks, loss="squared", alpha=1e-2, max_epochs=2)
    assert stream.n_samples_seen_ == 200 and stream.model().n_epochs_ == 2
    with pytest.warns(DeprecationWarning, match="epochs is deprecated"):
        again = fastdual.train_stream(chunks, loss="squared", alpha=1e-2, epochs=2)
    np.testing.assert_array_equal(again.model().coef_, stream.model().coef_)
    with pytest.raises(ValueError, match=r"can be read once"):
        fastdual.train_stream(iter([(X, y)]), loss="squared", max_epochs=2)


def test_streaming_a_file_holds_one_chunk_at_a_time(tmp_path):
    """A file ~40x the chunk size: peak traced memory stays within a few chunks (plus O(d)),
    far below what loading the file whole takes."""
    rng = np.random.default_rng(0)
    n, d = 40_000, 500
    X = sp.random(n, d, density=0.02, random_state=1, format="csr")
    y = np.where(rng.standard_normal(n) > 0, 1, -1)
    path = tmp_path / "big.svm"
    write_svmlight(path, X, y)
    size = path.stat().st_size
    chunk = size // 40
    tracemalloc.start()
    try:
        fastdual.train_stream(path, loss="logistic", alpha=1e-4, n_features=d, classes=[-1, 1],
                              chunk_bytes=chunk)
        _, streamed_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        from sklearn.datasets import load_svmlight_file
        load_svmlight_file(str(path), n_features=d)
        _, whole_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert streamed_peak < 6 * chunk + 64 * (d + 1) + 2_000_000
    assert streamed_peak < whole_peak / 5


def test_train_stream_shows_its_progress_when_verbose(tmp_path, capsys):
    X, y = problem_for("logistic", n=200, d=10, seed=5, sparse=True)
    write_svmlight(tmp_path / "a.svm", X, y)
    fastdual.train_stream(tmp_path / "a.svm", loss="logistic", chunk_bytes=1000, verbose=1)
    assert "fastdual.train_stream" in capsys.readouterr().err
    fastdual.train_stream(tmp_path / "a.svm", loss="logistic", chunk_bytes=1000)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("array, value", [("clock", [5, 900, 3]), ("clock", [-1, 0, 0]),
                                          ("last", None)])
def test_a_saved_state_outside_what_a_stream_reaches_is_refused(tmp_path, array, value):
    X, y = problem_for("logistic", n=50, d=4, seed=7)
    stream = fastdual.OnlineRDA("logistic", alpha=1e-3, classes=[-1, 1], output="average")
    stream.partial_fit(X, y)
    model = stream.model()
    arrays = dict(stream.state.arrays())
    if array == "last":
        arrays["last"] = arrays["last"].copy()
        arrays["last"][0] = 10 ** 9
    else:
        arrays["clock"] = np.array(value, dtype=np.int64)
    settings = dict(stream.state.settings(), n_features=4, n_samples_seen=50,
                    regularize_intercept=stream.regularize_intercept)
    model.stream_ = {"settings": settings, "arrays": arrays}
    model.save(tmp_path / "bad.npz")
    with pytest.raises(ValueError, match=r"saved RDA state"):
        fastdual.OnlineRDA.load(tmp_path / "bad.npz")


@pytest.mark.parametrize("chunk_bytes", [1, 100, 4096, 1 << 20])
def test_train_stream_reads_every_row_once_whatever_the_chunk(tmp_path, chunk_bytes):
    """Lines longer than chunk_bytes (wide rows), a last line without a newline and CRLF line
    ends: each row is trained on exactly once, as when the file is read whole."""
    from sklearn.datasets import load_svmlight_file
    X, y = problem_for("logistic", n=120, d=400, seed=6, sparse=False)
    path = tmp_path / "wide.svm"
    write_svmlight(path, X, y)
    text = path.read_bytes().replace(b"\n", b"\r\n").rstrip(b"\r\n")
    path.write_bytes(text)
    assert max(len(line) for line in text.split(b"\n")) > 4096
    stream = fastdual.train_stream(path, loss="logistic", alpha=1e-2, chunk_bytes=chunk_bytes)
    assert stream.n_samples_seen_ == 120
    X_read, y_read = load_svmlight_file(str(path), n_features=400, zero_based=False)
    whole = fastdual.OnlineRDA("logistic", alpha=1e-2, classes=[-1, 1]).partial_fit(X_read, y_read)
    np.testing.assert_array_equal(stream.model().coef_, whole.model().coef_)


def test_a_stream_pickles_and_copies_and_continues_the_same():
    import copy
    import pickle
    X, y = problem_for("smooth_hinge", n=90, d=4, seed=8)
    stream = fastdual.OnlineRDA("smooth_hinge", gamma=0.5, alpha=1e-2, classes=[-1, 1])
    stream.partial_fit(X[:45], y[:45])
    for again in (pickle.loads(pickle.dumps(stream)), copy.deepcopy(stream)):
        assert again.loss_params == {"gamma": 0.5}
        again.partial_fit(X[45:], y[45:])
        reference = copy.deepcopy(stream).partial_fit(X[45:], y[45:])
        np.testing.assert_array_equal(again.model().coef_, reference.model().coef_)
