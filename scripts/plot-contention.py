#!/usr/bin/env python3
"""Draws the plots of `cargo bench --bench contention` from its CSV (target/contention.csv).

Fresh takes (the default): docs/contention.png, completed operations/s (a take, and its push
with `--push-back`), failed writes per operation and fairness (the fewest operations any process
completed / the mean) against the number of contending processes, one line per mode, one column
per setup. Reads the CSV of either bench version (takes_per_s/failed_per_take columns, or
ops_per_s/failed_per_op with push_pct; a mode that pushes back is labelled with its percentage,
the modes that only take keep their name).

`--pushback`: docs/pushback.png, the recycling run (`--push-back PCT`, docs/BENCHMARKS.md
"Recycling at scale"): per setup (one column each), operations/s (a take and its push; naive and
Curator only take), the same over the mode's own 1-process rate (the target: >= 0.9 at 32), and
the slowest client (fewest operations of a process / the mean; the target: >= 0.5), against the
number of contending processes, one line per mode. A black bar on the first row marks 3 x
Curator's takes/s at 32: the target for the default layout.

    pip install matplotlib
    python3 scripts/plot-contention.py [target/contention.csv] [docs/contention.png]
    python3 scripts/plot-contention.py --pushback docs/pushback.csv docs/pushback.png
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# How the push-back plot names the bench's modes.
LABELS = {
    "zooid": "zooid, format 4 (default)",
    "zooid-single": "zooid-single, formats 1/2",
    "zooid-blocks": "zooid-blocks, format 3",
    "zooid-fair": "zooid-fair",
    "naive": "naive (seed loop, takes only)",
    "curator": "Curator (takes only)",
}


def read(src):
    """(setup, mode, push %) -> clients -> list of rows; several rounds are averaged."""
    data = defaultdict(lambda: defaultdict(list))
    with open(src, newline="") as f:
        for row in csv.DictReader(f):
            data[(row["setup"], row["mode"], row.get("push_pct"))][int(row["clients"])].append(row)
    return data


def mean(rows, *keys):
    """The mean of the first of `keys` present in `rows`."""
    key = next(k for k in keys if rows[0].get(k) is not None)
    return sum(float(r[key]) for r in rows) / len(rows)


def setups_of(data):
    return sorted({k[0] for k in data}, key=lambda s: (s != "standalone", s))


def plot_contention(src, dst):
    data = read(src)
    setups = setups_of(data)
    fig, axes = plt.subplots(3, len(setups), figsize=(6 * len(setups), 12), squeeze=False)
    for col, setup in enumerate(setups):
        for (s, mode, push), by_clients in sorted(data.items(), key=lambda kv: str(kv[0])):
            if s != setup:
                continue
            label = f"{mode} (push {push} %)" if push not in (None, "0") else mode
            xs = sorted(by_clients)
            for ax, keys in zip(
                (axes[0][col], axes[1][col], axes[2][col]),
                (("ops_per_s", "takes_per_s"), ("failed_per_op", "failed_per_take"), ("min_over_mean",)),
            ):
                ax.plot(xs, [mean(by_clients[c], *keys) for c in xs], marker="o", label=label)
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


def plot_pushback(src, dst):
    data = read(src)
    setups = setups_of(data)
    order = list(LABELS)
    fig, axes = plt.subplots(3, len(setups), figsize=(6.5 * len(setups), 13), squeeze=False)
    for col, setup in enumerate(setups):
        keys = sorted(
            (k for k in data if k[0] == setup),
            key=lambda k: order.index(k[1]) if k[1] in order else len(order),
        )
        push_pct = next((k[2] for k in keys if k[2] not in (None, "0")), "?")
        for key in keys:
            mode, by_clients = key[1], data[key]
            xs = sorted(by_clients)
            ops = [mean(by_clients[c], "ops_per_s", "takes_per_s") for c in xs]
            label = LABELS.get(mode, mode)
            style = dict(marker="o", linewidth=2.5 if mode == "zooid" else 1.5)
            axes[0][col].plot(xs, ops, label=label, **style)
            one = ops[0] if xs[0] == 1 else None
            if one:
                axes[1][col].plot(xs, [o / one for o in ops], label=label, **style)
            axes[2][col].plot(
                xs, [mean(by_clients[c], "min_over_mean") for c in xs], label=label, **style
            )
            if mode == "curator" and 32 in xs:
                axes[0][col].scatter(
                    [32], [3 * ops[xs.index(32)]], marker="_", s=600, color="black", zorder=3,
                    label="3 x Curator at 32 (the default's target)",
                )
        axes[0][col].set_title(
            f"{setup}: operations/s (take + push of {push_pct} %; naive, Curator: takes)"
        )
        axes[0][col].set_yscale("log")
        axes[1][col].set_title(f"{setup}: operations/s / the mode's own 1-process rate")
        axes[1][col].axhline(0.9, color="grey", linestyle="--", linewidth=1)
        axes[2][col].set_title(f"{setup}: slowest client: fewest operations / mean")
        axes[2][col].axhline(0.5, color="grey", linestyle="--", linewidth=1)
        axes[2][col].set_ylim(-0.03, 1.05)
        for ax in (axes[0][col], axes[1][col], axes[2][col]):
            ax.set_xscale("log", base=2)
            ax.set_xticks([1, 4, 16, 32], ["1", "4", "16", "32"])
            ax.set_xlabel("contending processes (own sessions)")
            ax.grid(True, alpha=0.3)
    # One legend for all panels (the modes are the same), under them.
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9)
    fig.suptitle(
        "Recycling: every take of 1,000 IDs followed by a push-back of its last 10 %;"
        " one run, ratios within it (grey dashes, black bar: the targets)"
    )
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(dst, dpi=90)
    print(f"wrote {dst}")


def main(argv):
    pushback = "--pushback" in argv
    paths = [a for a in argv if a != "--pushback"]
    if pushback:
        src = paths[0] if paths else "docs/pushback.csv"
        dst = paths[1] if len(paths) > 1 else "docs/pushback.png"
        plot_pushback(src, dst)
    else:
        src = paths[0] if paths else "target/contention.csv"
        dst = paths[1] if len(paths) > 1 else "docs/contention.png"
        plot_contention(src, dst)


if __name__ == "__main__":
    main(sys.argv[1:])
