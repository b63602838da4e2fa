"""Compiled Legendre sums and velocity scalings of the S^2 numba path (truncated analysis,
face-velocity synthesis), each in a serial and a threaded flavour.

The threaded flavours (``*_threads``, ``parallel=True``) run the same operations in the same
order for every output value, split over rows or over orders, so both flavours give bitwise
the same results; :func:`solvers.core.backend.compute_threads` decides which one a grid gets
(threads only pay on grids of at least ``THREADS_MIN_VALUES`` values). The numpy references
are in :mod:`solvers.sphere.problem`.

Import only through :mod:`solvers.core.backend` users (numba is optional at run time).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always", error_model="numpy")
def _spectrum_body(table, c, starts, m_unique, row_scale, spec):
    nt, ns = table.shape
    nq = m_unique.size
    for j in prange(nt):  # rows are independent
        for q in range(nq):
            stop = starts[q + 1] if q + 1 < nq else ns
            re = 0.0
            im = 0.0
            for i in range(starts[q], stop):
                t = table[j, i]
                re += t * c[i].real
                im += t * c[i].imag
            spec[j, m_unique[q]] = complex(re * row_scale[j], im * row_scale[j])


@njit(cache=True, error_model="numpy")
def legendre_spectrum_into(table, c, starts, m_unique, row_scale, spec):
    """Write ``spec[j, m] = row_scale[j] sum_{l} table[j, (l, m)] c_(l, m)`` for the orders present.

    ``table`` (n_theta, n_sel) real, ``c`` (n_sel,) complex, entries of order
    ``m_unique[q]`` in ``starts[q]:starts[q+1]``; ``spec`` (n_theta, n_freq) complex: the
    other columns are left as they are (zero them once).
    """
    _spectrum_body(table, c, starts, m_unique, row_scale, spec)


@njit(cache=True, parallel=True, error_model="numpy")
def legendre_spectrum_into_threads(table, c, starts, m_unique, row_scale, spec):
    """:func:`legendre_spectrum_into`, rows on numba's threads."""
    _spectrum_body(table, c, starts, m_unique, row_scale, spec)


@njit(cache=True, error_model="numpy")
def legendre_spectrum(table, c, starts, m_unique, n_freq, row_scale):
    """Longitude spectrum ``spec[j, m] = row_scale[j] sum_{l} table[j, (l, m)] c_(l, m)``.

    ``table`` (n_theta, n_sel) real, ``c`` (n_sel,) complex, entries of order
    ``m_unique[q]`` in ``starts[q]:starts[q+1]``; returns (n_theta, n_freq) complex.
    """
    spec = np.zeros((table.shape[0], n_freq), dtype=np.complex128)
    _spectrum_body(table, c, starts, m_unique, row_scale, spec)
    return spec


@njit(cache=True, error_model="numpy")
def signed_sum(a, w, sign):
    """``sign * (a + w)`` elementwise, 2-D."""
    out = np.empty_like(a)
    for j in range(a.shape[0]):
        for k in range(a.shape[1]):
            out[j, k] = sign * (a[j, k] + w[j, k])
    return out


@njit(cache=True, inline="always", error_model="numpy")
def _signed_inplace_body(a, w, sign):
    for j in prange(a.shape[0]):
        for k in range(a.shape[1]):
            a[j, k] = sign * (a[j, k] + w[j, k])
    return a


@njit(cache=True, error_model="numpy")
def signed_sum_inplace(a, w, sign):
    """``a <- sign * (a + w)`` elementwise, 2-D (the operations of :func:`signed_sum`)."""
    return _signed_inplace_body(a, w, sign)


@njit(cache=True, parallel=True, error_model="numpy")
def signed_sum_inplace_threads(a, w, sign):
    """:func:`signed_sum_inplace`, rows on numba's threads."""
    return _signed_inplace_body(a, w, sign)


@njit(cache=True, error_model="numpy")
def signed_ratio_sum(g, f, beta, w, sign):
    """``sign * (g / (beta f) + w)`` elementwise, 2-D (softmax attention)."""
    out = np.empty_like(g)
    for j in range(g.shape[0]):
        for k in range(g.shape[1]):
            out[j, k] = sign * (g[j, k] / (beta * f[j, k]) + w[j, k])
    return out


@njit(cache=True, inline="always", error_model="numpy")
def _analysis_body(table, spec, starts, m_unique, scale, threads):
    nt, ns = table.shape
    nq = m_unique.size
    re = np.zeros(ns)
    im = np.zeros(ns)
    n_chunks = max(min(threads, nq), 1)
    bounds = np.full(n_chunks + 1, nq)  # chunks of about ns / n_chunks entries each
    bounds[0] = 0
    c = 1
    for q in range(nq):
        while c < n_chunks and starts[q] >= (c * ns) // n_chunks:
            bounds[c] = q
            c += 1
    for c in prange(n_chunks):
        for j in range(nt):
            for q in range(bounds[c], bounds[c + 1]):
                stop = starts[q + 1] if q + 1 < nq else ns
                z = spec[j, m_unique[q]]
                zr, zi = z.real, z.imag
                for i in range(starts[q], stop):
                    t = table[j, i]
                    re[i] += t * zr
                    im[i] += t * zi
    out = np.empty(ns, dtype=np.complex128)
    for i in range(ns):
        out[i] = complex(re[i] * scale[i], im[i] * scale[i])
    return out


@njit(cache=True, error_model="numpy")
def legendre_analysis(table, spec, starts, m_unique, scale):
    """``c_i = scale[i] sum_j table[j, i] spec[j, m_i]`` (sum over j in order), complex (n_sel,).

    ``table`` (n_theta, n_sel) real (quadrature weight times ``Ybar_lm(theta_j)``), ``spec``
    (n_theta, n_freq) complex (longitude spectra of the rows), entries of order
    ``m_unique[q]`` in ``starts[q]:starts[q+1]``.
    """
    return _analysis_body(table, spec, starts, m_unique, scale, 1)


@njit(cache=True, parallel=True, error_model="numpy")
def legendre_analysis_threads(table, spec, starts, m_unique, scale, threads):
    """:func:`legendre_analysis` with the orders split into ``threads`` chunks of about equal
    entry counts on numba's threads (every coefficient still summed over j in order)."""
    return _analysis_body(table, spec, starts, m_unique, scale, threads)
