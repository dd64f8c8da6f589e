"""Model-file weights as text at C speed (fastdual._core.text.format_rows): the same characters
as Python's "%.17g " formatting (LIBLINEAR's save_model's format), read back to the same bits."""
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fastdual._core.text import format_rows

EXTREMES = [0.0, -0.0, 1.0, -1.5, 0.1, 1 / 3, 1e-308, 5e-324, -2.5e-17, 1.7976931348623157e308,
            -1.7976931348623157e308, 123456789012345678.0, 2.0 ** 53 + 1]


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
