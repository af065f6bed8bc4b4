#!/usr/bin/env python3
"""Fits the polynomials of the code generator's inline f32 tanh and erf (lib/codegen/emitter.cpp)
and prints their coefficients, highest degree first, as the emitter's Horner loops take them.

Near-minimax relative error by Lawson's iteratively reweighted least squares on a dense grid
(numpy, float64; references from Python's math module). Run: /usr/bin/python3 scripts/fit_f32_math.py
  tanh, |x| < 0.9:  tanh(x) = x + x^3 * P(x^2)
  erf,  |x| < 1:    erf(x)  = x * P(x^2)
  erf,  1 <= |x| < 4: erf(x) = 1 - exp(-x^2) * R(t), t = 1 / (1 + |x|)  (R ~ erfc(x) e^(x^2))
"""
import math

import numpy as np


def lawson(basis, target, weight, iters=200):
    """Coefficients c minimizing max |weight * (basis @ c - target)| (approximately)."""
    w = np.ones(len(target)) / len(target)
    c = None
    for _ in range(iters):
        sw = np.sqrt(w)
        c, *_ = np.linalg.lstsq(basis * (sw * weight)[:, None], sw * weight * target, rcond=None)
        err = np.abs(weight * (basis @ c - target))
        w = w * err
        w /= w.sum()
    return c, np.max(np.abs(weight * (basis @ c - target)))


def fit_odd(f, lo, hi, first, degree):
    """P of `degree` in u = x^2 with f(x) ~ first(x) + x^k P(x^2), relative error of f."""
    x = np.linspace(lo, hi, 20000)[1:]
    fx = np.array([f(v) for v in x])
    u = x * x
    if first == "x":  # tanh: (f - x) / x^3 = P(u), error relative to f
        target, scale = (fx - x) / x**3, x**3 / fx
    else:  # erf: f / x = P(u)
        target, scale = fx / x, x / fx
    basis = np.stack([u**i for i in range(degree + 1)], axis=1)
    return lawson(basis, target, scale)


def main():
    c, e = fit_odd(math.tanh, 0.0, 0.9, "x", 5)
    print("tanh P (u = x^2), max rel err %.3g:" % e, ", ".join("%.17g" % v for v in c[::-1]))
    c, e = fit_odd(math.erf, 0.0, 1.0, "1", 5)
    print("erf P (u = x^2), max rel err %.3g:" % e, ", ".join("%.17g" % v for v in c[::-1]))
    x = np.linspace(1.0, 4.0, 20000)
    t = 1.0 / (1.0 + x)
    r = np.array([math.erfc(v) * math.exp(v * v) for v in x])
    basis = np.stack([t**i for i in range(8)], axis=1)
    c, e = lawson(basis, r, 1.0 / r)
    print("erf R (t = 1/(1+|x|)), max rel err %.3g:" % e, ", ".join("%.17g" % v for v in c[::-1]))


if __name__ == "__main__":
    main()
