"""train_stream's certificate pass: the block-form certificate of the streamed model, one chunk
at a time, equals duality_gap's on the same rows loaded whole (margin duals, no refinement)."""
import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

import fastdual
from conftest import problem_for


def write(path, X, y):
    dump_svmlight_file(X, y, str(path), zero_based=False)


@pytest.mark.parametrize("loss", ["logistic", "hinge", "squared", "smooth_hinge"])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("l1_ratio", [0.0, 0.5, 1.0])
def test_the_stream_certificate_is_duality_gap_on_the_whole_file(tmp_path, loss, fit_intercept,
                                                                  l1_ratio):
    X, y = problem_for(loss, n=150, d=7, seed=2, sparse=True)
    path = tmp_path / "d.svm"
    write(path, X, y)
    stream = fastdual.train_stream(path, loss=loss, alpha=1e-2, l1_ratio=l1_ratio,
                                   max_epochs=2, chunk_bytes=700, fit_intercept=fit_intercept)
    model = stream.model()
    X_read, y_read = load_svmlight_file(str(path), n_features=7, zero_based=False)
    cert = fastdual.duality_gap(X_read, y_read, model.coef_,
                                model.intercept_ if fit_intercept else None, loss=loss,
                                alpha=1e-2, l1_ratio=l1_ratio, refine_epochs=0)
    assert model.primal_ == pytest.approx(cert.primal, rel=1e-12)
    assert model.dual_ == pytest.approx(cert.dual, rel=1e-12, abs=1e-14)
    assert model.gap_ == pytest.approx(cert.gap, rel=1e-9, abs=1e-14)
    assert model.gap_ >= 0.0 and stream.certificate_.gap == model.gap_
    # ... and it belongs to this model: another partial_fit drops it
    stream.partial_fit(X_read[:5], y_read[:5])
    assert np.isnan(stream.model().gap_)


def test_a_callable_source_is_certified_and_certify_false_skips_the_pass():
    X, y = problem_for("squared", n=120, d=5, seed=3)

    def chunks():
        return ((X[k:k + 25], y[k:k + 25]) for k in range(0, 120, 25))

    stream = fastdual.train_stream(chunks, loss="squared", alpha=1e-2, max_epochs=3)
    cert = fastdual.duality_gap(X, y, stream.model().coef_, stream.model().intercept_,
                                loss="squared", alpha=1e-2, refine_epochs=0)
    assert stream.model().primal_ == pytest.approx(cert.primal, rel=1e-12)
    assert stream.model().gap_ == pytest.approx(cert.gap, rel=1e-9)
    skipped = fastdual.train_stream(chunks, loss="squared", alpha=1e-2, max_epochs=3,
                                    certify=False)
    assert np.isnan(skipped.model().gap_) and skipped.certificate_ is None
    np.testing.assert_array_equal(skipped.model().coef_, stream.model().coef_)


def test_what_cannot_be_certified_in_blocks_is_said():
    X, y = problem_for("squared", n=60, d=4, seed=4)
    once = iter([(X, y)])
    with pytest.raises(ValueError, match=r"certify=True needs a source that can be read again"):
        fastdual.train_stream(once, loss="squared", certify=True)
    with pytest.raises(ValueError, match=r"certify=True: a stream's certificate needs no free "
                                         r"intercept"):
        fastdual.train_stream(lambda: [(X, y)], loss="squared", regularize_intercept=False,
                              certify=True)
    with pytest.raises(TypeError, match=r"certify must be None, True or False"):
        fastdual.train_stream(lambda: [(X, y)], loss="squared", certify="yes")
    # by default a free intercept's stream is trained and left uncertified
    stream = fastdual.train_stream(lambda: [(X, y)], loss="squared",
                                   regularize_intercept=False)
    assert np.isnan(stream.model().gap_)


def test_train_stream_sources_that_are_not_sources_are_clear_errors(tmp_path):
    X, y = problem_for("logistic", n=60, d=5, seed=5)
    with pytest.raises(TypeError, match=r"source must be a path, a list of paths, a callable"):
        fastdual.train_stream(5, classes=[-1, 1])
    with pytest.raises(TypeError, match=r"every chunk of the source must be a pair \(X, y\), "
                                        r"got ndarray of length 60"):
        fastdual.train_stream([X, y], classes=[-1, 1])
    path = tmp_path / "d.svm"
    write(path, X, y)
    as_bytes = fastdual.train_stream(str(path).encode(), loss="logistic")
    as_str = fastdual.train_stream(str(path), loss="logistic")
    np.testing.assert_array_equal(as_bytes.model().coef_, as_str.model().coef_)


@pytest.mark.parametrize("edit, match", [
    (lambda s: s.update(block=3), r"unknown \['block'\]"),
    (lambda s: s.pop("output"), r"missing \['output'\]"),
    (lambda s: s.update(n_features=-3), r"n_features -3 is not its model's 5"),
    (lambda s: s.update(n_features=10 ** 13), r"n_features 10000000000000 is not its model's"),
    (lambda s: s.update(free_intercept=True), r"free_intercept True contradicts its intercept"),
    (lambda s: s.update(n_samples_seen=-1), r"says -1 samples seen, its state took 60 steps"),
    (lambda s: s.update(n_epochs=-2), r"n_epochs -2 is not a count"),
])
def test_a_saved_stream_with_inconsistent_settings_is_refused(tmp_path, edit, match):
    import json
    X, y = problem_for("hinge", n=60, d=5, seed=6)
    stream = fastdual.OnlineRDA("hinge", classes=[-1, 1]).partial_fit(X, y)
    stream.save(tmp_path / "s.npz")
    arrays = dict(np.load(tmp_path / "s.npz"))
    meta = json.loads(arrays["metadata"].tobytes())
    edit(meta["stream"])
    arrays["metadata"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=match):
        fastdual.OnlineRDA.load(tmp_path / "bad.npz")
