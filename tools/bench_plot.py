#!/usr/bin/env python3
"""bench_plot.py JSON DIR: the charts of a `spconv bench --json` file, PNG and SVG, into DIR.

  speedup.png/.svg        SpMV speedup against the baseline (cuSPARSE on the GPU, the CSR
                          reference on the CPU) per matrix and format, one panel per device
  conversion.png/.svg     CSR -> X cost in baseline SpMVs against the break-even count (the
                          SpMVs after which the conversion has paid for itself; "never" on top)
  bytes_per_nnz.png/.svg  bytes per nonzero per format, a point per matrix, the median marked

Only results whose SpMV ran and passed the check are drawn. `spconv bench --plot DIR` runs
this script; it can also be run alone on a saved JSON file (e.g. one written on a machine
without matplotlib). Needs python3-matplotlib (Debian); exits with 3 when it is missing.
"""
import json
import math
import os
import sys


def by_device(data):
    """{device: [ok results]} in the order of the settings' devices."""
    out = {}
    for dev in data["settings"]["devices"]:
        rows = [r for r in data["results"] if r["device"] == dev and r["status"] == "ok"]
        if rows:
            out[dev] = rows
    return out


def baseline_of(data, dev):
    for r in data["results"]:
        if r["device"] == dev:
            return r["baseline"]
    return "baseline"


def speedup_labels(data):
    """The settings' formats, each followed by the other kernels run on it ("csr:rows")."""
    seen = {r["format"] for r in data["results"]}
    out = []
    for f in data["settings"]["formats"]:
        out.append(f)
        out += sorted(x for x in seen if x.startswith(f + ":"))
    return out


def title(data):
    m = data["machine"]
    where = m["gpu"] if m.get("gpu") else m["cpu"]
    return "spconv %s, %s, %s, %s" % (data["spconv_version"], where, data["settings"]["value_type"], data["date"][:10])


def save(fig, out_dir, name):
    paths = []
    for ext in ("png", "svg"):
        p = os.path.join(out_dir, name + "." + ext)
        fig.savefig(p, dpi=120, bbox_inches="tight")
        paths.append(p)
    print("bench_plot.py: wrote " + ", ".join(paths))


def plot_speedup(plt, data, devices, formats, colors, out_dir):
    """formats: speedup_labels(data)."""
    matrices = [m["name"] for m in data["matrices"]]
    width = max(8.0, 0.5 * len(matrices) * max(1, len(formats)) * 0.25 + 3)
    fig, axes = plt.subplots(len(devices), 1, figsize=(width, 4.2 * len(devices)), squeeze=False)
    bar = 0.8 / max(1, len(formats))
    for ax, (dev, rows) in zip(axes[:, 0], devices.items()):
        speed = {(r["matrix"], r["format"]): r["speedup"] for r in rows if r["speedup"]}
        for k, f in enumerate(formats):
            xs, ys = [], []
            for i, m in enumerate(matrices):
                if (m, f) in speed:
                    xs.append(i - 0.4 + (k + 0.5) * bar)
                    ys.append(speed[(m, f)])
            if xs:
                ax.bar(xs, ys, width=bar, color=colors[f], label=f)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_ylabel("speedup vs %s (%s)" % (baseline_of(data, dev), dev))
        ax.set_xticks(range(len(matrices)))
        ax.set_xticklabels(matrices, rotation=60, ha="right", fontsize=7)
        ax.set_xlim(-0.6, len(matrices) - 0.4)
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(ncol=min(len(formats), 10), fontsize=7, loc="upper left")
    axes[0, 0].set_title(title(data) + ": SpMV speedup (above 1: faster than the baseline)", fontsize=9)
    save(fig, out_dir, "speedup")
    plt.close(fig)


def plot_conversion(plt, data, devices, colors, out_dir):
    fig, axes = plt.subplots(1, len(devices), figsize=(6.5 * len(devices), 5), squeeze=False)
    for ax, (dev, rows) in zip(axes[0, :], devices.items()):
        pts = [r for r in rows if r["conversion_spmvs"] and r["conversion_spmvs"] > 0]
        finite = [r["break_even"] for r in pts if isinstance(r["break_even"], int) and r["break_even"] > 0]
        never_y = (max(finite) if finite else 10) * 4
        for f in data["settings"]["formats"]:
            mine = [r for r in pts if r["format"] == f]
            if not mine:
                continue
            xs = [r["conversion_spmvs"] for r in mine]
            ys = [max(r["break_even"], 1) if isinstance(r["break_even"], int) else never_y for r in mine]
            ax.scatter(xs, ys, color=colors[f], label=f, s=18, alpha=0.8)
        ax.axhline(never_y, color="grey", linewidth=0.6, linestyle=":")
        # x in axes fractions, y in data: the label sits at the left edge whatever the x range.
        ax.text(0.01, never_y, "never", transform=ax.get_yaxis_transform(), va="bottom", fontsize=7, color="grey")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("CSR -> X on the %s, in %s SpMVs" % (dev, baseline_of(data, dev)))
        ax.set_ylabel("break-even: SpMVs until the conversion pays off")
        ax.grid(which="both", alpha=0.3)
        ax.legend(fontsize=7)
    axes[0, 0].set_title(title(data) + ": conversion cost", fontsize=9)
    save(fig, out_dir, "conversion")
    plt.close(fig)


def plot_bytes(plt, data, devices, colors, out_dir):
    formats = data["settings"]["formats"]
    fig, axes = plt.subplots(1, len(devices), figsize=(max(6.0, 0.9 * len(formats) + 2) * len(devices), 4.5),
                             squeeze=False)
    for ax, (dev, rows) in zip(axes[0, :], devices.items()):
        for k, f in enumerate(formats):
            ys = sorted(r["bytes_per_nnz"] for r in rows if r["format"] == f and r["bytes_per_nnz"])
            if not ys:
                continue
            xs = [k + 0.3 * ((i % 7) / 6.0 - 0.5) for i in range(len(ys))]
            ax.scatter(xs, ys, color=colors[f], s=14, alpha=0.7)
            mid = ys[len(ys) // 2] if len(ys) % 2 else (ys[len(ys) // 2 - 1] + ys[len(ys) // 2]) / 2
            ax.hlines(mid, k - 0.3, k + 0.3, color="black", linewidth=1.2)
        ax.set_xticks(range(len(formats)))
        ax.set_xticklabels(formats)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("bytes per nonzero (%s variant; bar: median)" % dev)
        ax.grid(axis="y", which="both", alpha=0.3)
    axes[0, 0].set_title(title(data) + ": memory footprint", fontsize=9)
    save(fig, out_dir, "bytes_per_nnz")
    plt.close(fig)


def main(argv):
    if len(argv) != 3:
        print("usage: bench_plot.py BENCH.json OUT_DIR", file=sys.stderr)
        return 2
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench_plot.py: matplotlib is not installed (Debian: apt-get install python3-matplotlib)",
              file=sys.stderr)
        return 3
    with open(argv[1]) as f:
        data = json.load(f)
    os.makedirs(argv[2], exist_ok=True)
    devices = by_device(data)
    if not devices:
        print("bench_plot.py: no result passed its check: nothing to plot", file=sys.stderr)
        return 0
    cmap = plt.get_cmap("tab10")
    labels = speedup_labels(data)
    colors = {f: cmap(i % 10) for i, f in enumerate(labels)}
    plot_speedup(plt, data, devices, labels, colors, argv[2])
    plot_conversion(plt, data, devices, colors, argv[2])
    plot_bytes(plt, data, devices, colors, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
