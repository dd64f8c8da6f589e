"""Markdown report from one or more ``results.json`` files written by ``benchmarks.run``.

    python -m benchmarks.report benchmarks/results/results.json [more.json ...]
"""
import argparse
import io
import json

from .run import fmt_t, print_case_table

TARGET_KEYS = (("0.01", "1e-2"), ("0.0001", "1e-4"), ("1e-06", "1e-6"))


def load(paths, latest=False):
    """Every case of the files in order; with latest, a case (data set, problem, alpha) measured
    again in a later file replaces the earlier one (a re-run of some cases after a change)."""
    datasets, cases, metas = {}, [], []
    for path in paths:
        with open(path) as f:
            r = json.load(f)
        datasets.update(r["datasets"])
        if latest:
            keys = {(c["dataset"], c["problem"], c["alpha"]) for c in r["cases"]}
            cases = [c for c in cases if (c["dataset"], c["problem"], c["alpha"]) not in keys]
        cases += r["cases"]
        metas.append(r["meta"])
    return datasets, cases, metas


def dataset_table(datasets):
    out = ["| data | n | d | nnz | X@w (ms) | X.T@a (ms) | floor (ms) |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for name, info in datasets.items():
        m = info["matvec"]
        out.append("| %s | %d | %d | %d | %.3g | %.3g | %.3g |" % (
            name, info["n"], info["d"], info["nnz"], 1e3 * m["forward"], 1e3 * m["backward"],
            1e3 * m["floor"]))
    return "\n".join(out)


def fastdual_summary(cases):
    """fastdual against the fastest peer of the same run, per case and target."""
    out = ["| data | problem | alpha | target | fastdual (s) | fastest peer (s) | peer | "
           "peer / fastdual |", "|---|---|---:|---:|---:|---:|---|---:|"]
    for c in cases:
        fd = c["solvers"].get("fastdual", {})
        if "time_to" not in fd:
            continue
        for key, label in TARGET_KEYS:
            peers = [(e["time_to"][key], s) for s, e in c["solvers"].items()
                     if s != "fastdual" and "time_to" in e and e["time_to"][key] is not None]
            best = min(peers) if peers else (None, "none reached it")
            t_fd = fd["time_to"][key]
            ratio = "%.2f" % (best[0] / t_fd) if best[0] is not None and t_fd else "-"
            out.append("| %s | %s | %g | %s | %s | %s | %s | %s |" % (
                c["dataset"], c["problem"], c["alpha"], label, fmt_t(t_fd), fmt_t(best[0]),
                best[1], ratio))
    return "\n".join(out)


# The time-to-1e-4 targets of the suite: for these problems, fastdual against the fastest of
# LIBLINEAR, Snap ML and lightning; for elastic-net logistic, against tick's SVRG and a third
# of scikit-learn's saga.
TARGET_PEERS = ("liblinear-dual", "liblinear-primal", "snapml", "lightning-SDCA",
                "lightning-SAGA")
TARGET_PROBLEMS = ("hinge", "squared_hinge", "logistic", "smooth_hinge", "ridge")


def target_table(cases, key="0.0001"):
    """One row per case at alpha 1e-4: is fastdual's time to 1e-4 within the target?"""
    out = ["| data | problem | fastdual t(1e-4) (s) | target | target time (s) | "
           "target / fastdual | met |", "|---|---|---:|---|---:|---:|---|"]
    met = total = 0
    for c in cases:
        fd = c["solvers"].get("fastdual", {})
        if c["alpha"] != 1e-4 or "time_to" not in fd:
            continue
        times = {s: e["time_to"][key] for s, e in c["solvers"].items()
                 if "time_to" in e and e["time_to"][key] is not None}
        if c["problem"] in TARGET_PROBLEMS:
            peers = [(times[s], s) for s in TARGET_PEERS if s in times]
            target = min(peers) if peers else None
        elif c["problem"] == "enet_logistic":
            peers = [(times[s] * f, label) for s, f, label in
                     (("tick-SVRG", 1.0, "tick-SVRG"), ("sklearn-saga", 1 / 3, "sklearn-saga / 3"))
                     if s in times]
            target = min(peers) if peers else None
        else:
            continue
        t_fd = times.get("fastdual")
        if target is None:
            row_met = t_fd is not None
            cells = ("no target peer reached it", "-", "-")
        else:
            row_met = t_fd is not None and t_fd <= target[0]
            cells = (target[1], fmt_t(target[0]),
                     "%.2f" % (target[0] / t_fd) if t_fd else "-")
        met += row_met
        total += 1
        out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            c["dataset"], c["problem"], fmt_t(t_fd), *cells, "yes" if row_met else "no"))
    out.append("")
    out.append("Met in %d of %d cases." % (met, total))
    return "\n".join(out)


# The small-regularization target (alpha 1e-6): the faster of fastdual's solvers against the
# fastest first-order or dual peer; LIBLINEAR's primal Newton is reported beside it.
SMALL_ALPHA_PEERS = ("liblinear-dual", "snapml", "lightning-SDCA", "lightning-SAGA")
FASTDUAL_SOLVERS = ("fastdual", "fastdual-spdc", "fastdual-newton")


def small_alpha_table(cases, key="0.0001", alpha=1e-6):
    """One row per case at `alpha`: SDCA, SPDC, Newton, the fastest of them against the fastest
    first-order / dual peer (met or not), and LIBLINEAR's primal Newton beside it."""
    out = ["| data | problem | SDCA (s) | SPDC (s) | Newton (s) | target peer | peer (s) | "
           "peer / fastdual | met | liblinear-primal (s) | primal / fastdual |",
           "|---|---|---:|---:|---:|---|---:|---:|---|---:|---:|"]
    met = total = 0
    for c in cases:
        if c["alpha"] != alpha or c["problem"] not in TARGET_PROBLEMS:
            continue
        times = {s: e["time_to"][key] for s, e in c["solvers"].items()
                 if "time_to" in e and e["time_to"][key] is not None}
        ours = [times[s] for s in FASTDUAL_SOLVERS if s in times]
        if not any(s in c["solvers"] for s in FASTDUAL_SOLVERS):
            continue
        best = min(ours) if ours else None
        peers = [(times[s], s) for s in SMALL_ALPHA_PEERS if s in times]
        target = min(peers) if peers else None
        if not any(s in c["solvers"] for s in SMALL_ALPHA_PEERS):
            verdict, label = "no peer ran", "none ran"         # not counted either way
        else:
            row_met = best is not None and (target is None or best <= target[0])
            met += row_met
            total += 1
            verdict = "yes" if row_met else "no"
            label = target[1] if target else "none reached it"
        primal = times.get("liblinear-primal")
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c["dataset"], c["problem"], fmt_t(times.get("fastdual")),
            fmt_t(times.get("fastdual-spdc")), fmt_t(times.get("fastdual-newton")), label,
            fmt_t(target[0]) if target else "-",
            "%.2f" % (target[0] / best) if target and best else "-", verdict, fmt_t(primal),
            "%.2f" % (primal / best) if primal and best else "-"))
    out.append("")
    out.append("Met in %d of %d cases." % (met, total))
    return "\n".join(out)


AUTO_SOLVERS = ("fastdual", "fastdual-acc", "fastdual-newton", "fastdual-auto")


def auto_table(cases):
    """One row per case: time to 1e-4 and 1e-6 for each fastdual solver and auto, the fastest
    peer (every solver not fastdual's) at 1e-4, and the target: auto no later than it (met),
    and at most half its time (0.5x)."""
    out = ["| data | problem | alpha | SDCA | SDCA+acc | Newton | auto (1e-4) | auto (1e-6) | "
           "fastest peer | peer (1e-4) | peer (1e-6) | auto / peer | met | <= 0.5x |",
           "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---|"]
    met = half = total = 0
    for c in sorted(cases, key=lambda c: (c["dataset"], c["problem"], -c["alpha"])):
        if "fastdual-auto" not in c["solvers"]:
            continue
        t4 = {s: e["time_to"]["0.0001"] for s, e in c["solvers"].items() if "time_to" in e}
        t6 = {s: e["time_to"]["1e-06"] for s, e in c["solvers"].items() if "time_to" in e}
        auto4, auto6 = t4.get("fastdual-auto"), t6.get("fastdual-auto")
        peers = [(t, s) for s, t in t4.items() if not s.startswith("fastdual") and t is not None]
        ran = [s for s in c["solvers"] if not s.startswith("fastdual")]
        if not ran:
            continue
        total += 1
        peer = min(peers) if peers else None
        row_met = auto4 is not None and (peer is None or auto4 <= peer[0])
        row_half = auto4 is not None and (peer is None or auto4 <= 0.5 * peer[0])
        met += row_met
        half += row_half
        out.append("| %s | %s | %g | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c["dataset"], c["problem"], c["alpha"], fmt_t(t4.get("fastdual")),
            fmt_t(t4.get("fastdual-acc")), fmt_t(t4.get("fastdual-newton")), fmt_t(auto4),
            fmt_t(auto6), peer[1] if peer else "none reached 1e-4",
            fmt_t(peer[0]) if peer else "-", fmt_t(t6.get(peer[1])) if peer else "-",
            "%.2f" % (auto4 / peer[0]) if peer and auto4 else "-",
            "yes" if row_met else "no", "yes" if row_half else "no"))
    out.append("")
    out.append("auto no later than the fastest peer in %d of %d cases; at most 0.5x in %d."
               % (met, total, half))
    return "\n".join(out)


def certificate_table(cases):
    out = ["| data | problem | alpha | wall time to gap/P <= 1e-4 (s) | epochs | "
           "true (P-P*)/P* then | certificate holds | epoch (ms) | epoch / floor |",
           "|---|---|---:|---:|---:|---:|---|---:|---:|"]
    for c in cases:
        fd = c["solvers"].get("fastdual", {})
        cert = fd.get("certificate")
        if not cert:
            continue
        wall = fmt_t(cert["wall_seconds_median"])
        if not cert["converged"]:
            wall = "not reached (%s s)" % wall
        out.append("| %s | %s | %g | %s | %d | %.1e | %s | %.3g | %.2f |" % (
            c["dataset"], c["problem"], c["alpha"], wall,
            cert["n_epochs"], cert["true_relative_subopt"], cert["certificate_holds"],
            1e3 * (fd.get("epoch_seconds") or float("nan")),
            fd.get("epoch_floor_units") or float("nan")))
    return "\n".join(out)


def epoch_table(cases):
    out = ["| data | problem | alpha | solver | epoch (ms) | epoch / floor |",
           "|---|---|---:|---|---:|---:|"]
    for c in cases:
        for s, e in c["solvers"].items():
            if e.get("epoch_seconds") is not None:
                out.append("| %s | %s | %g | %s | %.3g | %.2f |" % (
                    c["dataset"], c["problem"], c["alpha"], s, 1e3 * e["epoch_seconds"],
                    e["epoch_floor_units"]))
    return "\n".join(out)


def case_tables(cases):
    buf = io.StringIO()
    for c in cases:
        print_case_table(c, file=buf)
    return buf.getvalue()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="+")
    p.add_argument("--sections", nargs="+",
                   default=["data", "summary", "targets", "certificate", "epochs", "cases"])
    p.add_argument("--latest", action="store_true",
                   help="a case measured in a later file replaces the earlier measurement")
    args = p.parse_args(argv)
    datasets, cases, metas = load(args.paths, latest=args.latest)
    parts = {"data": dataset_table(datasets), "summary": fastdual_summary(cases),
             "targets": target_table(cases), "small": small_alpha_table(cases),
             "auto": auto_table(cases),
             "certificate": certificate_table(cases), "epochs": epoch_table(cases),
             "cases": case_tables(cases)}
    for sec in args.sections:
        print(parts[sec])
        print()


if __name__ == "__main__":
    main()
