#!/usr/bin/env python3
"""Draws docs/contention.png from target/contention.csv (written by
`cargo bench --bench contention`): completed operations/s (a take, and its push with
`--push-back`), failed writes per operation and fairness (the fewest operations any process
completed / the mean) against the number of contending processes, one line per mode, one column
per setup. Reads the CSV of either bench version (takes_per_s/failed_per_take columns, or
ops_per_s/failed_per_op with push_pct; a mode that pushes back is labelled with its
percentage, the modes that only take keep their name).

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
        ops = row.get("ops_per_s", row.get("takes_per_s"))
        failed = row.get("failed_per_op", row.get("failed_per_take"))
        mode = row["mode"]
        if row.get("push_pct") is not None:
            mode = f"{mode} (push {row['push_pct']} %)" if row["push_pct"] != "0" else mode
        data[(row["setup"], mode)][int(row["clients"])].append(
            (float(ops), float(failed), float(row["min_over_mean"]))
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
    axes[0][col].set_title(f"{setup}: completed operations/s")
    axes[1][col].set_title(f"{setup}: failed writes per operation (server side)")
    axes[2][col].set_title(f"{setup}: fewest operations of a process / mean (fairness)")
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
