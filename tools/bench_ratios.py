#!/usr/bin/env python3
"""The figures the executor issue's targets are stated in, from Google Benchmark JSON:

    tools/bench_ratios.py bench_merge_routes.json bench_algorithms.json

- bench_merge_routes `segment_overhead`: the cost of one more segment, (t(k) - t(1)) / (k - 1)
  in microseconds, for k = 4 and 8, per algorithm and dispatch policy;
- bench_algorithms: multigpu's speed-up against CUB with storage allocated once, Thrust with a
  caching allocator and the plain Thrust call, per algorithm, type, size and shape, and the
  4-slot time as a fraction of the 1-slot speed.
Standard library only, so it runs on the GPU machine as it is."""
import json
import re
import sys

ALGORITHMS = ["reduce", "dot", "count_if", "inclusive_scan", "exclusive_scan", "transform", "fill", "copy",
              "empty kernel (the floor)"]
POLICIES = ["caller thread", "worker threads", "graph replay"]


def runs(path):
    with open(path) as f:
        for b in json.load(f).get("benchmarks", []):
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            yield b


def overhead(path):
    t = {}
    for b in runs(path):
        m = re.match(r"segment_overhead/(\d+)/(\d+)/(\d+)", b["name"])
        if m:
            k, policy, algorithm = map(int, m.groups())
            t[(k, policy, algorithm)] = b["real_time"]  # microseconds
    if not t:
        return
    print("cost of one more segment, 2^16 floats, us: k = 4 / k = 8 (t(1) in brackets)")
    print("| operation | " + " | ".join(POLICIES) + " |")
    print("|---|" + "---|" * len(POLICIES))
    for a, name in enumerate(ALGORITHMS):
        cells = []
        for p in range(len(POLICIES)):
            if (1, p, a) not in t:
                cells.append("-")
                continue
            one = t[(1, p, a)]
            per = [f"{(t[(k, p, a)] - one) / (k - 1):.1f}" if (k, p, a) in t else "-" for k in (4, 8)]
            cells.append(f"{per[0]} / {per[1]} ({one:.1f})")
        if any(c != "-" for c in cells):
            print(f"| {name} | " + " | ".join(cells) + " |")


def ratios(path):
    rows = {}
    for b in runs(path):
        m = re.match(r"(\w+)<(\w+)>/(\d+)/(\d+)/", b["name"])
        if not m or "speedup_vs_cub" not in b:
            continue
        algorithm, type_, n, shape = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
        rows[(algorithm, type_, n, shape)] = b
    if not rows:
        return
    print("\nspeed-up of multigpu: vs CUB (storage allocated once) / vs Thrust with a caching allocator / vs plain Thrust")
    for (algorithm, type_, n, shape), b in sorted(rows.items()):
        line = (f"{algorithm}<{type_}> 2^{n.bit_length() - 1} shape {shape}: {b['speedup_vs_cub']:.2f} / "
                f"{b.get('speedup_vs_thrust_cached', float('nan')):.2f} / {b.get('speedup_vs_thrust', float('nan')):.2f}")
        one = rows.get((algorithm, type_, n, 1))
        if shape != 1 and one is not None:
            line += f"; {one['real_time'] / b['real_time']:.2f} of the 1-slot speed"
        print(line)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    for path in sys.argv[1:]:
        overhead(path)
        ratios(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
