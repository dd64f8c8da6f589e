"""Model-file weights as text at C speed (fastdual._core.text.format_rows): the same characters
as Python's "%.17g " formatting (LIBLINEAR's save_model's format), read back to the same bits."""
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
