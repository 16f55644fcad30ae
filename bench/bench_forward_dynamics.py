"""Forward dynamics: speed against Pinocchio's aba, and the stability papers.

1. Per call (median of 7 runs) on panda and ur5, both methods, float64 and
   float32, against ``pin.aba``; batch throughput for N = 10,000 states.
2. Mata, Provenzano, Valero and Cuadrado (2002), "Serial-robot dynamics
   algorithms for moderately large numbers of joints", Sec. 5.1, Table 5: Ascher's two-link arm,
   |qdd_float64 - qdd_float32| over a turn of body 2, and cond(M).
3. Mohan and Saha (2007), "A recursive, numerically stable, and efficient
   simulation algorithm for serial robots", Sec. 4.2, Table 3 and Fig. 8: forced
   simulation of the PUMA of Table 2 for the full T = 10 s; per joint, the
   time until |q - q_desired| exceeds a tolerance, the power balance, and
   the float32 forward-dynamics error along the trajectory.
Run: scripts/run.sh bench   (or python bench/bench_forward_dynamics.py)
"""
import os
import sys
import time

import numpy as np
import pinocchio as pin

sys.path.insert(0, os.path.dirname(__file__))
from common import HEADER, per_call_us, robot_pair, row  # noqa: E402
from stability_cases import (ASCHER, ASCHER_GRAVITY, METHODS, PUMA_ATOL,  # noqa: E402
                             PUMA_DURATION, PUMA_RTOL, ascher_table, deviation_times,
                             power_balance, puma_float32_errors, puma_forced_simulation,
                             puma_model)

from robot_dynamics_ros.dynamics import forward_dynamics  # noqa: E402

BATCH = 10_000
# Table 3 tolerances (rad); Mohan and Saha do not state their own.
TOLERANCES = (1e-6, 1e-4, 1e-2)


def speed():
    print(HEADER)
    for name in ("panda", "ur5"):
        model, pmodel, data = robot_pair(name)
        rng = np.random.default_rng(0)
        q, qd, tau = rng.uniform(-1, 1, (3, model.nv))
        theirs = per_call_us(lambda: pin.aba(pmodel, data, q, qd, tau))
        for method in METHODS:
            print(row(f"{name} {method}", per_call_us(
                lambda: forward_dynamics(model, q, qd, tau, method=method)),
                theirs, "ratio <= 2" if method == "recursive" else ""))
        q32, qd32, tau32 = (x.astype(np.float32) for x in (q, qd, tau))
        print(row(f"{name} recursive float32", per_call_us(
            lambda: forward_dynamics(model, q32, qd32, tau32)), theirs, ""))
        Q, QD, TAU = rng.uniform(-1, 1, (3, BATCH, model.nv))
        print(row(f"{name} batch recursive (us/sample)",
                  per_call_us(lambda: forward_dynamics(model, Q, QD, TAU),
                              repeat=5, number=3) / BATCH,
                  per_call_us(lambda: [pin.aba(pmodel, data, *x) for x in zip(Q, QD, TAU)],
                              repeat=5, number=1) / BATCH, "ratio <= 0.5"))


def table5():
    cond, rows = ascher_table()
    print(f"\nMata et al. (2002), Table 5: Ascher's two-link arm, body 2 through 360 deg in "
          f"2 deg steps, qd = 0, tau = 0\n  parameters {ASCHER} (m2 chosen: the "
          f"paper's value is unreadable), gravity {ASCHER_GRAVITY}\n"
          f"  cond(M): min {cond.min():.3g}, max {cond.max():.3g}; "
          f"max |qdd| {rows['recursive']['qdd_max'].max():.1f} rad/s^2")
    print(f"  {'|qdd_DP - qdd_SP| (rad/s^2)':<34}{'recursive (ABA)':>18}{'Cholesky (CRBA)':>18}"
          f"   paper: ABA / CRBA")
    paper = {("max", 1): "0.4976 / 1.2922", ("mean", 1): "0.0132 / 0.2751"}
    for stat in ("max", "mean"):
        for j in (0, 1):
            print(f"  {stat + ' joint ' + str(j + 1):<34}{rows['recursive'][stat][j]:>18.4f}"
                  f"{rows['cholesky'][stat][j]:>18.4f}   {paper.get((stat, j), '')}")


def table3():
    model = puma_model()
    print(f"\nMohan and Saha (2007), Table 3: PUMA forced simulation, T = {PUMA_DURATION} s, RK45 "
          f"rtol {PUMA_RTOL:g} atol {PUMA_ATOL:g}, outputs every 1 ms, float64")
    runs = {}
    for method in METHODS:
        start = time.perf_counter()
        runs[method] = puma_forced_simulation(model, method, PUMA_DURATION)
        print(f"  {method}: {time.perf_counter() - start:.1f} s CPU, "
              f"{runs[method][0].evaluations} forward-dynamics calls")
    print(f"  {'time until |q - q_des| > tol (s)':<36}"
          + "".join(f"{'q' + str(j + 1):>8}" for j in range(model.nv)))
    for tol in TOLERANCES:
        for method in METHODS:
            sim, q_des, _ = runs[method]
            print(f"  {method + f' tol {tol:g} rad':<36}"
                  + "".join(f"{t:8.2f}" for t in deviation_times(sim, q_des, tol)))
    print("  paper (tolerance not stated): recursive 5.4 5.6 5.4 5.4 5.4 5.4, "
          "nonrecursive 5.1 5.1 4.8 5.1 5.1 4.8")
    print("\n  Fig. 8 power balance: max |sum tau qd_des - sum tau qd_sim| (W), "
          "max |desired power| "
          f"{np.abs(power_balance(*runs['recursive'][::2])[0]).max():.2f} W")
    windows = ((0, 3), (3, 5), (5, 6), (6, PUMA_DURATION))
    print(f"  {'':<12}" + "".join(f"{f'{a}-{b} s':>12}" for a, b in windows))
    for method in METHODS:
        sim, _, qd_des = runs[method]
        desired, simulated = power_balance(sim, qd_des)
        gap = np.abs(desired - simulated)
        print(f"  {method:<12}" + "".join(
            f"{gap[(sim.t >= a) & (sim.t <= b)].max():12.3g}" for a, b in windows))
    errors = puma_float32_errors(model)
    print("\n  float32 forward dynamics along eq. (38), |qdd - qdd_des| (rad/s^2)")
    for method in METHODS:
        e = errors[method]
        print(f"  {method:<12} mean {e.mean():.3g}  max per joint "
              + " ".join(f"{x:.2g}" for x in e.max(axis=0)))


def main():
    speed()
    table5()
    table3()


if __name__ == "__main__":
    main()
