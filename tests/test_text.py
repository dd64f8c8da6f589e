"""Model-file weights as text at C speed (fastdual._core.text.format_rows): the same characters
as Python's "%.17g " formatting (LIBLINEAR's save_model's format), read back to the same bits."""
import os
import shutil
import subprocess
import sys
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fastdual._core.text import format_rows

EXTREMES = [0.0, -0.0, 1.0, -1.5, 0.1, 1 / 3, 1e-308, 5e-324, -2.5e-17, 1.7976931348623157e308,
            -1.7976931348623157e308, 123456789012345678.0, 2.0 ** 53 + 1, 1e20, 1e-30, 1e30,
            np.inf, -np.inf, np.nan]


def python_rows(values):
    return "".join(("%.17g " * values.shape[1]) % tuple(row) + "\n"
                   for row in values.tolist())


@pytest.mark.parametrize("shape", [(1, len(EXTREMES)), (len(EXTREMES), 1)])
def test_the_extremes_are_written_as_python_writes_them(shape):
    values = np.array(EXTREMES).reshape(shape)
    text = format_rows(values).decode()
    assert text == python_rows(values)
    back = np.array([line.split() for line in text.splitlines()], dtype=np.float64)
    np.testing.assert_array_equal(back, values)
    assert np.array_equal(np.signbit(back), np.signbit(values))


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(0, 7), columns=st.integers(1, 9), seed=st.integers(0, 2 ** 32 - 1))
def test_random_weights_round_trip(rows, columns, seed):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((rows, columns)) * 10.0 ** rng.integers(-300, 300, (rows, columns))
    # zeros of both signs among them (written without printf)
    zeros = rng.random((rows, columns)) < 0.4
    values[zeros] = np.where(rng.random(int(zeros.sum())) < 0.5, 0.0, -0.0)
    text = format_rows(values)
    assert text.decode() == python_rows(values)
    assert text.count(b"\n") == rows


def test_a_non_contiguous_array_is_refused_not_misread():
    with pytest.raises(ValueError):
        format_rows(np.ones((3, 4))[:, ::2])


def fast_range_values(rng, count):
    """Finite doubles of every sign and magnitude from 1e-31 to 1e31 (where the 17 digits are
    found in double-double arithmetic), with random mantissas."""
    return rng.choice([-1.0, 1.0], count) * rng.random(count) * 10.0 ** rng.integers(-31, 32,
                                                                                       count)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_the_digits_of_the_fast_path_are_printf_s(seed):
    values = fast_range_values(np.random.default_rng(seed), 2000).reshape(40, 50)
    assert format_rows(values).decode() == python_rows(values)


def test_powers_of_ten_their_neighbours_and_the_carries_into_them():
    # floor(log10) one off, 17 nines rounding up to the next power, every "%f"/"%e" switch
    values = []
    for e in range(-32, 33):
        power = float(f"1e{e}")
        values += [power, np.nextafter(power, 0.0), np.nextafter(power, np.inf),
                   float(f"9.99999999999999995e{e}"), float(f"9.9999999999999999e{e}"),
                   float(f"9.99999999999999994e{e}"), -float(f"1.00000000000000005e{e}")]
    values = np.array(values).reshape(-1, 7)
    assert format_rows(values).decode() == python_rows(values)


def exact_tie(value):
    """Whether value's exact decimal expansion has 18 significant digits, the last a 5: half
    way between two 17-digit numbers."""
    digits = Decimal(value).normalize().as_tuple().digits
    return len(digits) == 18 and digits[-1] == 5


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_numbers_at_and_near_a_tie_of_the_17th_digit_round_as_printf(seed):
    rng = np.random.default_rng(seed)
    # the nearest doubles to 18-digit decimals ending in 5 (within an ulp of a tie), and exact
    # ties m 2^-k, m odd: its expansion is the 18 digits of m 5^k, the last a 5
    decimals = [float(f"{rng.integers(10 ** 16, 10 ** 17)}5e{rng.integers(-45, 14)}")
                for _ in range(300)]
    ties = []
    for k in rng.integers(2, 26, 300).tolist():
        low, high = -(-10 ** 17 // 5 ** k), min(10 ** 18 // 5 ** k, 2 ** 53)
        m = int(rng.integers(low, high)) | 1
        ties.append(m * 2.0 ** -k * float(rng.choice([-1, 1])))
    assert sum(map(exact_tie, ties)) > 250
    values = np.array(decimals + ties).reshape(30, 20)
    assert format_rows(values).decode() == python_rows(values)


LOCALE_SCRIPT = r"""
import locale, sys
import numpy as np
locale.setlocale(locale.LC_NUMERIC, "de_DE.UTF-8")
assert locale.str(1.5) == "1,5"                  # the comma locale is in force
import fastdual
from fastdual._core.text import format_rows, parse_libsvm
from fastdual.formats import load_liblinear, save_liblinear
values = np.array([[0.1, 2.0 ** -25, 1e-40, -1e300, 12.5]])     # fast path and printf's
text = format_rows(values).decode()
assert text == "".join("%.17g " % v for v in values[0]) + "\n", text
y, data, indices, indptr, d = parse_libsvm(b"1 1:0.5 3:1.25e-3\n-1 2:2.5\n", 10)
assert data.tolist() == [0.5, 1.25e-3, 2.5] and y.tolist() == [1.0, -1.0], data
X = np.array([[0.1, 1.0], [1.0, 0.2], [0.3, 0.9], [0.8, 0.1]])
model = fastdual.train(X, np.array([1, -1, 1, -1]), loss="hinge", C=1e-20)
save_liblinear(model, sys.argv[1])
back = load_liblinear(sys.argv[1])
assert np.array_equal(back.coef_, model.coef_), (back.coef_, model.coef_)
assert locale.str(1.5) == "1,5"                  # the program's locale is restored
print("ok")
"""


def test_files_are_written_and_read_with_a_point_under_a_comma_locale(tmp_path):
    """A program that sets LC_NUMERIC to a locale whose decimal point is a comma still gets
    model files with points (printf writes the numbers the fast path cannot) and a LIBSVM
    reader that reads points (strtod), and keeps its locale."""
    localedef = shutil.which("localedef")
    if localedef is None:
        pytest.skip("no localedef to build a comma locale with")
    built = subprocess.run([localedef, "-i", "de_DE", "-f", "UTF-8",
                            str(tmp_path / "de_DE.UTF-8")], capture_output=True)
    if not (tmp_path / "de_DE.UTF-8").exists():
        pytest.skip(f"localedef could not build de_DE.UTF-8: {built.stderr[-200:]!r}")
    # from the temporary folder, without PYTHONPATH: the installed fastdual, not the sources
    done = subprocess.run([sys.executable, "-c", LOCALE_SCRIPT, str(tmp_path / "model")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, LOCPATH=str(tmp_path), PYTHONPATH=""))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
