#!/usr/bin/env python3
"""Draws docs/contention.png from target/contention.csv (written by
`cargo bench --bench contention`): completed takes/s, failed writes per take and fairness (the
fewest takes any process completed / the mean) against the number of contending processes, one
line per mode, one column per setup.

    pip install matplotlib
    python3 scripts/plot-contention.py [target/contention.csv] [docs/contention.png]
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

src = sys.argv[1] if len(sys.argv) > 1 else "target/contention.csv"
dst = sys.argv[2] if len(sys.argv) > 2 else "docs/contention.png"

# (setup, mode) -> clients -> list of (takes/s, failed/take); several rounds are averaged.
data = defaultdict(lambda: defaultdict(list))
with open(src, newline="") as f:
    for row in csv.DictReader(f):
        data[(row["setup"], row["mode"])][int(row["clients"])].append(
            (
                float(row["takes_per_s"]),
                float(row["failed_per_take"]),
                float(row["min_over_mean"]),
            )
        )

setups = sorted({s for s, _ in data}, key=lambda s: (s != "standalone", s))
fig, axes = plt.subplots(3, len(setups), figsize=(6 * len(setups), 12), squeeze=False)
for col, setup in enumerate(setups):
    for (s, mode), by_clients in sorted(data.items()):
        if s != setup:
            continue
        xs = sorted(by_clients)
        mean = lambda k, c: sum(v[k] for v in by_clients[c]) / len(by_clients[c])  # noqa: E731
        axes[0][col].plot(xs, [mean(0, c) for c in xs], marker="o", label=mode)
        axes[1][col].plot(xs, [mean(1, c) for c in xs], marker="o", label=mode)
        axes[2][col].plot(xs, [mean(2, c) for c in xs], marker="o", label=mode)
    axes[0][col].set_title(f"{setup}: completed takes/s")
    axes[1][col].set_title(f"{setup}: failed writes per take (server side)")
    axes[2][col].set_title(f"{setup}: fewest takes of a process / mean (fairness)")
    axes[2][col].axhline(0.5, color="grey", linestyle="--", linewidth=1)
    for ax in (axes[0][col], axes[1][col], axes[2][col]):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("contending processes")
        ax.grid(True, alpha=0.3)
        ax.legend()
    axes[1][col].set_yscale("symlog", linthresh=1)
fig.tight_layout()
fig.savefig(dst, dpi=90)
print(f"wrote {dst}")
