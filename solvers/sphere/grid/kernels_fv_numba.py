"""Fused numba kernels of the S^2 step: the band-by-band finite-volume right-hand side on the
merged Gauss grid, and the Legendre sums of the truncated analysis and the face-velocity
synthesis (the numpy references are in :mod:`solvers.sphere.grid.fv` and
:mod:`solvers.sphere.problem`; tests/core/test_backends.py and test_fused_paths.py).

Compiled with ``cache=True``; import only through :mod:`solvers.core.backend` users (numba is
optional at run time).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from solvers.core.kernels_numba import _clip01, limited_slope


@njit(cache=True, error_model="numpy")
def _total(x):
    """Sum of a 1-D array with 4 interleaved partial sums (deterministic, vectorisable)."""
    n = x.size
    a0 = a1 = a2 = a3 = 0.0
    m = n - n % 4
    for i in range(0, m, 4):
        a0 += x[i]
        a1 += x[i + 1]
        a2 += x[i + 2]
        a3 += x[i + 3]
    for i in range(m, n):
        a0 += x[i]
    return (a0 + a1) + (a2 + a3)


@njit(cache=True, error_model="numpy")
def _max0(x, n):
    """``max(0, x[0], ..., x[n-1])`` with 4 independent running maxima (max is exact in any order)."""
    a0 = a1 = a2 = a3 = 0.0
    m = n - n % 4
    for i in range(0, m, 4):
        a0 = max(a0, x[i])
        a1 = max(a1, x[i + 1])
        a2 = max(a2, x[i + 2])
        a3 = max(a3, x[i + 3])
    for i in range(m, n):
        a0 = max(a0, x[i])
    return max(max(a0, a1), max(a2, a3))


@njit(cache=True, inline="always", error_model="numpy")
def _bands(j0, j1, rho, rf, rho_c, fz, fm, out_s, out_n, u_phi, u_theta, merge, offset, dtheta, face_len,
           zwidth_row, code, limit, floor):
    """Fluxes of bands ``j0 <= j < j1`` and of the face rows ``j0 <= j < j1`` north of them;
    returns this chunk's ``(max zonal rate, max meridional rate)``.

    Writes ``fz`` of these bands, ``fm[j]`` of these face rows and the outflows through them
    (``out_s`` of band j-1, ``out_n`` of band j): disjoint between chunks. The south-face value
    of band ``j0 - 1`` (carried from band to band) is recomputed from its three rows.
    """
    nlat, nphi = rho.shape
    east = np.empty(nphi)
    west = np.empty(nphi + 1)
    south_prev = np.empty(nphi)  # south-face value of band j-1
    north_row = np.empty(nphi)
    slope = np.empty(nphi)
    ext = np.empty(nphi + 2)
    cand = np.empty(nphi)
    cand2 = np.empty(nphi)
    uface = np.empty(nphi)
    if j0 > 0:
        jb = j0 - 1
        jm, jp = (jb - 1 if jb > 0 else 0), jb + 1
        rf_m = rho[jm] if merge[jm] == 1 else rf[jm]
        rf_c = rho[jb] if merge[jb] == 1 else rf[jb]
        rf_p = rho[jp] if merge[jp] == 1 else rf[jp]
        for k in range(nphi):
            v = rf_c[k]
            south_prev[k] = v + 0.5 * limited_slope(v - rf_m[k], rf_p[k] - v, code)
    rz = 0.0
    rm = 0.0
    for j in range(j0, j1):
        r, o = merge[j], offset[j]
        nc = nphi // r
        rc, fzr = rho_c[o:o + nc], fz[o:o + nc]
        # zonal: reconstruction and flux through the east face of every cell of the band
        # (ext: the band's cell values with the periodic neighbours at both ends)
        ext[0] = rc[nc - 1]
        for q in range(nc):
            ext[q + 1] = rc[q]
        ext[nc + 1] = rc[0]
        for q in range(nc):
            v = ext[q + 1]
            s = limited_slope(v - ext[q], ext[q + 2] - v, code)
            east[q] = v + 0.5 * s
            west[q] = v - 0.5 * s
        west[nc] = west[0]
        uz = u_phi[j]
        uf = uz  # unmerged bands: the fine faces are the cells' east faces
        if r > 1:
            for q in range(nc):
                uface[q] = uz[q * r + r - 1]
            uf = uface
        dth = dtheta[j]
        for q in range(nc):
            u = uf[q]
            fzr[q] = (max(u, 0.0) * east[q] + min(u, 0.0) * west[q + 1]) * dth
            own, nxt = ext[q + 1], ext[q + 2]  # (both loaded: a select, not a branch, vectorises)
            up = own if u > 0.0 else nxt
            cand[q] = abs(u) if up > floor else 0.0
        rz = max(rz, _max0(cand, nc) / zwidth_row[j])  # = max |u| / width: division is monotone
        # meridional: face row j lies between bands j-1 and j
        jm, jp = (j - 1 if j > 0 else 0), (j + 1 if j < nlat - 1 else j)
        rf_m = rho[jm] if merge[jm] == 1 else rf[jm]
        rf_c = rho[j] if r == 1 else rf[j]
        rf_p = rho[jp] if merge[jp] == 1 else rf[jp]
        for k in range(nphi):
            v = rf_c[k]
            s = limited_slope(v - rf_m[k], rf_p[k] - v, code)
            slope[k] = s
            north_row[k] = v - 0.5 * s
        if j > 0:
            fl = face_len[j]
            ut, fmr = u_theta[j], fm[j]
            for k in range(nphi):
                u = ut[k]
                fmr[k] = (max(u, 0.0) * south_prev[k] + min(u, 0.0) * north_row[k]) * fl
                a = abs(u)
                pos = u > 0.0
                cand[k] = a if (pos & (rf_m[k] > floor)) else 0.0  # (& not and: no branch)
                cand2[k] = a if ((not pos) & (rf_c[k] > floor)) else 0.0
            rm = max(rm, max(_max0(cand, nphi) / dtheta[j - 1], _max0(cand2, nphi) / dtheta[j]))
            if limit:
                rs, os_ = merge[j - 1], offset[j - 1]
                osr = out_s[os_:os_ + nphi // rs]
                if rs == 1:
                    for k in range(nphi):
                        osr[k] = max(fmr[k], 0.0)
                else:
                    for q in range(nphi // rs):
                        acc = 0.0
                        for i in range(rs):
                            acc += max(fmr[q * rs + i], 0.0)
                        osr[q] = acc
                onr = out_n[o:o + nc]
                if r == 1:
                    for k in range(nphi):
                        onr[k] = max(-fmr[k], 0.0)
                else:
                    for q in range(nc):
                        acc = 0.0
                        for i in range(r):
                            acc += max(-fmr[q * r + i], 0.0)
                        onr[q] = acc
        for k in range(nphi):
            south_prev[k] = rf_c[k] + 0.5 * slope[k]
    return rz, rm


@njit(cache=True, inline="always", error_model="numpy")
def _sphere_fv_body(rho, u_phi, u_theta, merge, offset, n_cells, dtheta, face_len, area_row, zwidth_row,
                    code, dt, limit, mass_floor, threads, u0, coef, alpha, uj, mode):
    """S^2 on the reduced grid: ``(d rho/dt on the fine (nlat, nphi) grid, max_rate)``.

    Same operations as :class:`solvers.sphere.grid.fv.SphereFV` (see there), band by band: band
    ``j`` holds ``nphi / merge[j]`` cells numbered from ``offset[j]``, cell ``q`` covering the
    fine cells ``q merge[j] ... (q + 1) merge[j] - 1``; every geometric factor is constant
    along a band (``dtheta``, ``face_len`` (nlat+1,), ``area_row``, ``zwidth_row``), so the
    unmerged bands (most of them) need no index maps at all. The loops run over row views
    (``x[o:o + n]``) so that their indices are affine (vectorisable). Sums over the fine
    segments of a merged cell are accumulated left to right from 0.0, as the reference's
    ``bincount``; the mean density behind the mass floor is a 4-way interleaved sum (the
    reference's is pairwise); maxima do not depend on the order.

    Threads: the bands are split into one chunk per numba thread (:func:`_bands`), and the
    outflow limiter and the divergence run band-parallel; every value is computed by the same
    operations whatever the split (the rates are maxima), so the result is bitwise the same
    on any number of threads.

    ``mode`` 1 or 2 returns the Shu-Osher stage ``u0 + coef k`` or ``(u0 + coef k) + alpha (uj - u0)``
    of ``k = d rho/dt`` instead (``u0``, ``uj`` (nlat, nphi)), combined row by row as each row
    of ``k`` is done (:func:`_stage_row`); mode 0 ignores them.
    """
    nlat, nphi = rho.shape
    n = n_cells
    rho_c = np.empty(n)
    rf = np.empty((nlat, nphi))  # merged bands: the cell value of every fine cell (else: rho's row)
    for j in prange(nlat):
        r, o = merge[j], offset[j]
        nc = nphi // r
        rc, src, dst = rho_c[o:o + nc], rho[j], rf[j]
        if r == 1:
            for k in range(nphi):
                rc[k] = src[k]
        else:
            for q in range(nc):
                v = src[q * r]
                rc[q] = v
                for i in range(r):
                    dst[q * r + i] = v
    floor = mass_floor * max(_total(rho_c) / n, 0.0)
    fz = np.empty(n)
    fm = np.empty((nlat + 1, nphi))
    fm[0] = 0.0  # the poles: zero flux
    fm[nlat] = 0.0
    out_s = np.empty(n)  # outflow through the south / north faces of every cell
    out_n = np.empty(n)
    if limit:
        last = nphi // merge[nlat - 1]
        out_s[offset[nlat - 1]:offset[nlat - 1] + last] = 0.0  # (the south pole)
        out_n[0:nphi // merge[0]] = 0.0  # (the north pole)
    n_chunks = max(min(threads, nlat), 1)
    rates = np.zeros((n_chunks, 2))
    for c in prange(n_chunks):
        j0, j1 = (c * nlat) // n_chunks, ((c + 1) * nlat) // n_chunks
        rz_c, rm_c = _bands(j0, j1, rho, rf, rho_c, fz, fm, out_s, out_n, u_phi, u_theta, merge, offset,
                            dtheta, face_len, zwidth_row, code, limit, floor)
        rates[c, 0] = rz_c
        rates[c, 1] = rm_c
    rz = 0.0
    rm = 0.0
    for c in range(n_chunks):
        rz = max(rz, rates[c, 0])
        rm = max(rm, rates[c, 1])
    if limit:
        _limit_outflow(rho_c, fz, fm, out_s, out_n, merge, offset, area_row, dt)
    out = np.empty((nlat, nphi))
    for j in prange(nlat):
        r, o = merge[j], offset[j]
        nc = nphi // r
        a = area_row[j]
        fzr, fn, fs, dst = fz[o:o + nc], fm[j], fm[j + 1], out[j]
        if r == 1:
            dst[0] = ((fzr[nphi - 1] - fzr[0]) + (fn[0] - fs[0])) / a
            for k in range(1, nphi):
                dst[k] = ((fzr[k - 1] - fzr[k]) + (fn[k] - fs[k])) / a
        else:
            for q in range(nc):
                acc = 0.0
                for i in range(r):
                    acc += fn[q * r + i] - fs[q * r + i]
                v = ((fzr[q - 1 if q > 0 else nc - 1] - fzr[q]) + acc) / a
                for i in range(r):
                    dst[q * r + i] = v
        if mode > 0:
            _stage_row(dst, u0[j], coef, alpha, uj[j], mode == 2)
    return out, rz + rm


@njit(cache=True, inline="always", error_model="numpy")
def _stage_row(k, u0, c, alpha, uj, with_j):
    """``k <- (u0 + c k) + alpha (uj - u0)`` (``with_j``), else ``k <- u0 + c k``, 1-D: the
    operations of :func:`solvers.core.kernels_stages.shu_osher_stage`, in place."""
    if with_j:
        for i in range(k.size):
            k[i] = (u0[i] + c * k[i]) + alpha * (uj[i] - u0[i])
    else:
        for i in range(k.size):
            k[i] = u0[i] + c * k[i]


@njit(cache=True, inline="always", error_model="numpy")
def _limit_outflow(rho_c, fz, fm, out_s, out_n, merge, offset, area_row, dt):
    """Scale every cell's outflow to its content over ``dt`` (in place on ``fz``, ``fm``)."""
    nlat, nphi = fm.shape[0] - 1, fm.shape[1]
    scale = np.empty(rho_c.size)
    for j in prange(nlat):
        o = offset[j]
        nc = nphi // merge[j]
        a = area_row[j]
        rc, fzr, osr, onr, sc = rho_c[o:o + nc], fz[o:o + nc], out_s[o:o + nc], out_n[o:o + nc], scale[o:o + nc]
        # the flux through the west face of cell q is fzr[q - 1] (of cell 0: the band's last)
        sc[0] = _outflow_scale(fzr[0], fzr[nc - 1], osr[0], onr[0], rc[0] * a, dt)
        for q in range(1, nc):
            sc[q] = _outflow_scale(fzr[q], fzr[q - 1], osr[q], onr[q], rc[q] * a, dt)
    for j in prange(nlat):
        o = offset[j]
        nc = nphi // merge[j]
        fzr, sc = fz[o:o + nc], scale[o:o + nc]
        f = fzr[nc - 1]  # the right neighbour of the band's last cell is its first
        fzr[nc - 1] = f * sc[nc - 1] if f > 0.0 else f * sc[0]
        for q in range(nc - 1):
            f, own, nxt = fzr[q], sc[q], sc[q + 1]  # (both loaded: a select, vectorised)
            fzr[q] = f * (own if f > 0.0 else nxt)
    for j in prange(1, nlat):
        rn, on = merge[j - 1], offset[j - 1]
        r, o = merge[j], offset[j]
        fmr = fm[j]
        if rn == 1 and r == 1:
            scn, scs = scale[on:on + nphi], scale[o:o + nphi]
            for k in range(nphi):
                f, north, south = fmr[k], scn[k], scs[k]
                fmr[k] = f * (north if f > 0.0 else south)
        else:
            for k in range(nphi):
                f = fmr[k]
                fmr[k] = f * scale[on + k // rn] if f > 0.0 else f * scale[o + k // r]


@njit(cache=True, inline="always", error_model="numpy")
def _outflow_scale(east, west, south, north, content, dt):
    """The factor in [0, 1] that scales a cell's outflow (east/west face fluxes, south/north
    outflows) to its ``content`` over ``dt``."""
    out = max(east, 0.0) + max(-west, 0.0)
    out += south
    out += north
    sent = dt * out
    ratio = content / (sent if sent > 0.0 else 1.0)  # (branch-free: used where sent > content)
    return _clip01(ratio if sent > content else 1.0)


LIMITER_NAMES = ("minmod", "mc", "vanleer", "none")  # the codes of limited_slope


def _entry(code: int, threads: bool):
    """The S^2 fv kernel for limiter ``code``, a closure constant (its branch folded away),
    serial or threaded (``parallel=True``: the prange loops of the body on numba's threads);
    each has its own name, hence its own cache entry, and is compiled (or loaded) when first
    used."""
    def kernel(rho, u_phi, u_theta, merge, offset, n_cells, dtheta, face_len, area_row, zwidth_row,
               dt, limit, mass_floor, n_threads, u0, c, alpha, uj, mode):
        return _sphere_fv_body(rho, u_phi, u_theta, merge, offset, n_cells, dtheta, face_len, area_row,
                               zwidth_row, code, dt, limit, mass_floor, n_threads, u0, c, alpha, uj, mode)

    kernel.__name__ = kernel.__qualname__ = f"sphere_fv_{LIMITER_NAMES[code]}{'_threads' if threads else ''}"
    return njit(cache=True, parallel=threads, error_model="numpy")(kernel)


SPHERE_FV_KERNELS = {(code, threads): _entry(code, threads) for code in range(len(LIMITER_NAMES))
                     for threads in (False, True)}


def sphere_fv_rhs(rho, u_phi, u_theta, merge, offset, n_cells, dtheta, face_len, area_row, zwidth_row,
                  code, dt, limit, mass_floor, threads=1):
    """The S^2 fv kernel (see :func:`_sphere_fv_body`) for limiter ``code``, on ``threads``
    threads (1: the serial kernel; bitwise the same result)."""
    return SPHERE_FV_KERNELS[code, threads > 1](rho, u_phi, u_theta, merge, offset, n_cells, dtheta,
                                                face_len, area_row, zwidth_row, dt, limit, mass_floor, threads,
                                                rho, 0.0, 0.0, rho, 0)


def sphere_fv_stage(rho, u_phi, u_theta, merge, offset, n_cells, dtheta, face_len, area_row, zwidth_row,
                    code, dt, mass_floor, threads, u0, c, alpha, uj, with_j):
    """The limited S^2 fv right-hand side ``k`` of ``rho`` combined into the Shu-Osher stage
    ``(u0 + c k) + alpha (uj - u0)`` (``with_j``) or ``u0 + c k`` in the same call, bitwise
    :func:`sphere_fv_rhs` followed by :func:`solvers.core.kernels_stages.shu_osher_stage`;
    returns ``(stage (nlat, nphi), max_rate)``."""
    return SPHERE_FV_KERNELS[code, threads > 1](rho, u_phi, u_theta, merge, offset, n_cells, dtheta,
                                                face_len, area_row, zwidth_row, dt, True, mass_floor, threads,
                                                u0, c, alpha, uj, 2 if with_j else 1)
