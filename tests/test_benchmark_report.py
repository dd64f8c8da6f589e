"""The target table of the benchmark report counts what the suite's targets say."""
import os
import sys

# The repository root holds the benchmarks package; appended, as in test_peer_mapping.py.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.append(_ROOT)

from benchmarks import report  # noqa: E402


def case(problem, times, alpha=1e-4):
    return {"dataset": "d", "problem": problem, "alpha": alpha,
            "solvers": {s: {"time_to": {"0.01": t, "0.0001": t, "1e-06": t}}
                        for s, t in times.items()}}


def rows(text):
    return [line.split(" | ") for line in text.splitlines() if line.startswith("| d |")]


def test_only_liblinear_snapml_lightning_set_the_target():
    # scikit-learn's solver is faster than fastdual but not a target peer
    text = report.target_table([case("hinge", {"fastdual": 0.010, "sklearn-LinearSVC": 0.005,
                                               "liblinear-dual": 0.012, "snapml": 0.011})])
    (row,) = rows(text)
    assert row[3] == "snapml" and row[-1].startswith("yes")
    assert "Met in 1 of 1 cases." in text


def test_a_slower_fastdual_misses_and_unreached_targets_are_handled():
    cases = [case("ridge", {"fastdual": 0.02, "lightning-SDCA": 0.019}),
             case("logistic", {"fastdual": None, "snapml": 0.01}),
             case("smooth_hinge", {"fastdual": 0.01, "tick-SVRG": 0.001}),
             case("hinge", {"fastdual": 0.01}, alpha=1e-6)]        # other alpha: not counted
    text = report.target_table(cases)
    verdicts = [r[-1].strip(" |") for r in rows(text)]
    assert verdicts == ["no", "no", "yes"]
    assert "Met in 1 of 3 cases." in text


def test_elastic_net_target_is_tick_or_a_third_of_saga():
    met = report.target_table([case("enet_logistic", {"fastdual": 0.030, "tick-SVRG": 0.2,
                                                      "sklearn-saga": 0.12})])
    assert rows(met)[0][3] == "sklearn-saga / 3" and "Met in 1 of 1" in met
    missed = report.target_table([case("enet_logistic", {"fastdual": 0.05, "tick-SVRG": 0.2,
                                                         "sklearn-saga": 0.12})])
    assert "Met in 0 of 1" in missed


def test_small_alpha_target_takes_the_faster_fastdual_solver():
    cases = [case("logistic", {"fastdual": 0.3, "fastdual-spdc": 0.1, "snapml": 0.2,
                               "liblinear-primal": 0.05}, alpha=1e-6),
             case("ridge", {"fastdual": 0.3, "fastdual-spdc": 0.4, "liblinear-dual": 0.2},
                  alpha=1e-6),
             case("squared_hinge", {"fastdual": 0.3, "fastdual-newton": 0.05,
                                    "liblinear-dual": 0.2}, alpha=1e-6),
             case("hinge", {"fastdual": 0.1, "snapml": 0.01})]     # alpha 1e-4: not counted
    text = report.small_alpha_table(cases)
    first, second, third = rows(text)
    assert first[5] == "snapml" and first[8] == "yes" and first[-1].strip(" |") == "0.50"
    assert second[5] == "liblinear-dual" and second[8] == "no"
    assert third[4] == "0.05" and third[8] == "yes" and third[7] == "4.00"
    assert "Met in 2 of 3 cases." in text


def test_the_auto_table_counts_auto_against_every_peer():
    cases = [case("logistic", {"fastdual-auto": 0.010, "liblinear-primal": 0.030,
                               "sklearn-lbfgs": 0.025}),                   # met, <= 0.5x
             case("ridge", {"fastdual-auto": 0.010, "sklearn-ridge-sparse_cg": 0.015}),
             case("squared_hinge", {"fastdual-auto": 0.020, "liblinear-dual": 0.010}),
             case("smooth_hinge", {"fastdual-auto": 0.010})]               # no peer: not counted
    text = report.auto_table(cases)
    table = {r[1]: r for r in rows(text)}
    assert set(table) == {"logistic", "ridge", "squared_hinge"}
    assert table["logistic"][8] == "sklearn-lbfgs" and table["logistic"][-2:] == ["yes", "yes |"]
    assert table["ridge"][-2:] == ["yes", "no |"] and table["squared_hinge"][-2] == "no"
    assert "in 2 of 3 cases; at most 0.5x in 1." in text


def test_latest_replaces_a_re_measured_case(tmp_path):
    import json
    first = {"datasets": {}, "meta": {}, "cases": [case("logistic", {"fastdual-auto": 1.0}),
                                                   case("ridge", {"fastdual-auto": 1.0})]}
    second = {"datasets": {}, "meta": {}, "cases": [case("ridge", {"fastdual-auto": 2.0})]}
    paths = []
    for k, content in enumerate((first, second)):
        paths.append(tmp_path / f"r{k}.json")
        paths[-1].write_text(json.dumps(content))
    _, cases, _ = report.load(paths, latest=True)
    times = {c["problem"]: c["solvers"]["fastdual-auto"]["time_to"]["0.0001"] for c in cases}
    assert times == {"logistic": 1.0, "ridge": 2.0}
    assert len(report.load(paths)[1]) == 3
