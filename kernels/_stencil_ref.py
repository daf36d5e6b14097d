"""NumPy references shared by the stencil and convolution kernels (naive and reuse compute the same thing).

Zero padding outside the grid; float64; row blocks of 1024 run in parallel on the host cores."""
import numpy as np

from roofline.kernelapi import blocks

ROWS = 1024


def _padded(x, r, m):
    """Rows r-1 .. r+m of x with a zero border, as float64; row 1 of the result is grid row r."""
    n_rows, n = x.shape
    t = np.zeros((m + 2, n + 2), np.float64)
    lo, hi = max(r - 1, 0), min(r + m + 1, n_rows)
    t[lo - (r - 1):hi - (r - 1), 1:-1] = x[lo:hi]
    return t


def stencil5(x):
    """y = 0.5 c + 0.125 (north + south + west + east)."""
    n_rows, n = x.shape
    y = np.empty((n_rows, n), np.float64)

    def rows(r, stop):
        t = _padded(x, r, stop - r)
        c = t[1:-1, 1:-1]
        y[r:stop] = 0.5 * c + 0.125 * (t[:-2, 1:-1] + t[2:, 1:-1] + t[1:-1, :-2] + t[1:-1, 2:])

    blocks(rows, n_rows, ROWS)
    return y


def conv3x3(x, w):
    """y[i, j] = sum_ab w[a, b] x[i + a - 1, j + b - 1] (cross-correlation, as in deep-learning convolution)."""
    n_rows, n = x.shape
    w = w.astype(np.float64)
    y = np.empty((n_rows, n), np.float64)

    def rows(r, stop):
        m = stop - r
        t = _padded(x, r, m)
        acc = np.zeros((m, n), np.float64)
        for a in range(3):
            for b in range(3):
                acc += w[a, b] * t[a:a + m, b:b + n]
        y[r:stop] = acc

    blocks(rows, n_rows, ROWS)
    return y
