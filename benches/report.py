#!/usr/bin/env python3
"""Turns one `benches/compare` run directory into markdown tables and SVG charts.

usage: report.py RUN_DIR [DOC.md]

Reads RUN_DIR/meta.json, RUN_DIR/env.md, RUN_DIR/checks.tsv and the hyperfine
exports RUN_DIR/<mode>-<tree>[-list|-breakdown|-du|-du-busy].json (env-<tree>.md: versions, load); writes RUN_DIR/summary.md and
RUN_DIR/chart-<tree>.svg. With DOC.md, the summary also replaces the part of
DOC.md between the `<!-- compare:begin -->` and `<!-- compare:end -->`
lines (appended when they are missing). Standard library only.
"""

import json
import os
import sys
from html import escape

# Peers that compute sizes: the set the "fastest peer" ratio is taken over.
SIZE_PEERS = ("du", "diskus", "dust", "dua", "pdu", "gdu", "ncdu")
LIST_PEERS = ("find", "fdfind")
TREES = ("linux", "wide", "deep", "hardlinks")
BEGIN, END = "<!-- compare:begin -->", "<!-- compare:end -->"


def load(path):
    with open(path) as f:
        return json.load(f)


def results(run, mode, tree, suffix=""):
    path = os.path.join(run, f"{mode}-{tree}{suffix}.json")
    if not os.path.exists(path):
        return None
    out = {}
    for r in load(path)["results"]:
        out[r["command"]] = r
    return out


def kind(name):
    first = name.split()[0]
    if first == "traverse":
        return "traverse"
    if first == "floor":
        return "floor"
    if first in LIST_PEERS:
        return "list"
    return "size"


def ms(seconds):
    return seconds * 1000.0


def cell(r):
    if r is None:
        return "–"
    return f"{ms(r['median']):.0f} [{ms(r['user']):.0f}+{ms(r['system']):.0f}]"


def fastest(res, accept):
    best = None
    for name, r in (res or {}).items():
        if accept(name) and (best is None or r["median"] < best[1]["median"]):
            best = (name, r)
    return best


def ratio(r, best):
    if r is None or best is None:
        return "–"
    return f"{r['median'] / best[1]['median']:.2f}"


def checks(run):
    out = {}
    path = os.path.join(run, "checks.tsv")
    if os.path.exists(path):
        with open(path, newline="\n") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 6 and parts[0] != "tree":
                    out[(parts[0], parts[1])] = parts[2:]
    return out


def check_mark(chk, tree, name):
    c = chk.get((tree, name))
    if c is None:
        return ""
    status = c[3]
    if status == "ok":
        return "✓"
    if status.startswith("known"):
        return "≈¹"
    if status == "unchecked":
        return "?"
    return "**✗**"


def size_table(run, tree, chk):
    warm = results(run, "warm", tree)
    cold = results(run, "cold", tree)
    names = list((warm or cold or {}).keys())
    for n in (cold or {}):
        if n not in names:
            names.append(n)
    is_peer = lambda n: n.split()[0] in SIZE_PEERS
    bw, bc = fastest(warm, is_peer), fastest(cold, is_peer)
    lines = [
        f"### {tree}: sizes (median ms [user+sys ms]; ratio = median / fastest size peer)",
        "",
        "| command | total | warm | ratio | cold | ratio |",
        "|---|:-:|---:|---:|---:|---:|",
    ]
    for n in names:
        w = (warm or {}).get(n)
        c = (cold or {}).get(n)
        label = f"**`{n}`**" if kind(n) == "traverse" else f"`{n}`"
        lines.append(f"| {label} | {check_mark(chk, tree, n)} | {cell(w)} | {ratio(w, bw)} | {cell(c)} | {ratio(c, bc)} |")
    lines.append("")
    if bw:
        lines.append(f"Fastest size peer warm: `{bw[0]}` {ms(bw[1]['median']):.0f} ms.")
    if bc:
        lines.append(f"Fastest size peer cold: `{bc[0]}` {ms(bc[1]['median']):.0f} ms.")
    floor = fastest(warm, lambda n: kind(n) == "floor")
    if floor:
        f = floor[1]
        lines.append(
            f"Single-threaded floor warm: {ms(f['median']):.0f} ms "
            f"(user {ms(f['user']):.0f} + sys {ms(f['system']):.0f}); "
            f"target for the default engine ≤ 1.15 × floor / 2 = {ms(f['median']) * 1.15 / 2:.0f} ms."
        )
    lines.append("")
    return "\n".join(lines), warm, cold


def suffix_table(run, tree, suffix, title, is_base):
    """The table of a `compare` mode timed apart (`-list`, `-breakdown`): ratios against the
    fastest command `is_base` accepts."""
    warm = results(run, "warm", tree, suffix)
    cold = results(run, "cold", tree, suffix)
    if warm is None and cold is None:
        return None
    names = list((warm or cold).keys())
    bw, bc = fastest(warm, is_base), fastest(cold, is_base)
    lines = [
        f"### {tree}: {title}",
        "",
        "| command | warm | ratio | cold | ratio |",
        "|---|---:|---:|---:|---:|",
    ]
    for n in names:
        w = (warm or {}).get(n)
        c = (cold or {}).get(n)
        label = f"**`{n}`**" if kind(n) == "traverse" else f"`{n}`"
        lines.append(f"| {label} | {cell(w)} | {ratio(w, bw)} | {cell(c)} | {ratio(c, bc)} |")
    lines.append("")
    return "\n".join(lines)


def list_table(run, tree):
    return suffix_table(
        run, tree, "-list", "listing (ratio = median / faster of find and fd)",
        lambda n: n.split()[0] in LIST_PEERS,
    )


def breakdown_table(run, tree):
    return suffix_table(
        run, tree, "-breakdown",
        "breakdown (ratio = median / plain totals `traverse DIR`; lines of `-d 1` checked against `du -d 1`)",
        lambda n: n == "traverse DIR",
    )


def du_tables(run, tree):
    """The du calls, on an idle machine and beside CPU-bound processes: ratios against `du -s`."""
    is_du = lambda n: n == "du -s DIR"
    return [
        suffix_table(run, tree, "-du", "du calls (ratio = median / `du -s`)", is_du),
        suffix_table(
            run, tree, "-du-busy",
            "du calls on a busy machine (`--busy`: CPU-bound processes beside them; ratio = median / `du -s`)",
            is_du,
        ),
    ]


def targets(run, tree):
    """The issue's targets for the default engine (`traverse --engine auto`), met or not."""
    warm, cold = results(run, "warm", tree), results(run, "cold", tree)
    lw, lc = results(run, "warm", tree, "-list"), results(run, "cold", tree, "-list")
    is_peer = lambda n: n.split()[0] in SIZE_PEERS
    is_lpeer = lambda n: n.split()[0] in LIST_PEERS
    rows = []

    def row(what, value, limit):
        if value is None or limit is None:
            return
        verdict = "met" if value <= limit else "**missed**"
        rows.append(f"| {what} | {ms(value):.0f} | {ms(limit):.0f} | {verdict} |")

    def med(res, name):
        r = (res or {}).get(name)
        return r["median"] if r else None

    d = "traverse --engine auto DIR"
    for mode, res in (("warm", warm), ("cold", cold)):
        best = fastest(res, is_peer)
        if med(res, d) is None or best is None:
            continue
        factor = 0.9 if mode == "warm" else 0.6
        row(f"{mode}: ≤ {factor} × fastest peer (`{best[0]}`)", med(res, d), factor * best[1]["median"])
        row(f"{mode}: no peer faster (`{best[0]}`)", med(res, d), best[1]["median"])
        if mode == "warm" and med(res, "floor DIR"):
            row("warm: ≤ 1.15 × floor / 2", med(res, d), 1.15 * med(res, "floor DIR") / 2)
        if mode == "cold" and med(res, "du -sb DIR"):
            row("cold: ≤ 0.3 × `du -sb`", med(res, d), 0.3 * med(res, "du -sb DIR"))
    dl = "traverse --engine auto --list DIR"
    for mode, res in (("warm", lw), ("cold", lc)):
        best = fastest(res, is_lpeer)
        if med(res, dl) is not None and best is not None:
            row(f"{mode} --list: ≤ 0.9 × faster of find, fd (`{best[0]}`)", med(res, dl), 0.9 * best[1]["median"])
    if not rows:
        return None
    head = [
        f"#### {tree}: speed targets of the default engine (ms)",
        "",
        "| target | traverse | limit | |",
        "|---|---:|---:|---|",
    ]
    return "\n".join(head + rows) + "\n"


COLORS = {"traverse": "#d9480f", "floor": "#868e96", "size": "#1c7ed6", "list": "#74c0fc"}


def panel(res, x0, width, title):
    """One horizontal bar panel; returns (svg elements, height)."""
    if not res:
        return [], 0
    items = sorted(res.items(), key=lambda kv: kv[1]["median"])
    top = max(ms(r["median"]) for _, r in items) or 1.0
    label_w, bar_h, gap = 300, 16, 6
    els = [f'<text x="{x0}" y="20" font-weight="bold">{escape(title)}</text>']
    y = 34
    for name, r in items:
        m = ms(r["median"])
        w = (width - label_w - 70) * m / top
        color = COLORS[kind(name)]
        els.append(f'<text x="{x0 + label_w - 6}" y="{y + 12}" text-anchor="end">{escape(name)}</text>')
        els.append(f'<rect x="{x0 + label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{color}"/>')
        # Whiskers: fastest and slowest run.
        lo = (width - label_w - 70) * ms(r["min"]) / top
        hi = (width - label_w - 70) * ms(r["max"]) / top
        mid = y + bar_h / 2
        els.append(
            f'<line x1="{x0 + label_w + lo:.1f}" y1="{mid}" x2="{x0 + label_w + hi:.1f}" y2="{mid}" stroke="#212529"/>'
        )
        els.append(f'<text x="{x0 + label_w + max(w, hi) + 4:.1f}" y="{y + 12}">{m:.0f} ms</text>')
        y += bar_h + gap
    return els, y


def chart(run, tree, warm, cold, date):
    width = 760
    left, lh = panel(warm, 10, width, f"{tree}, warm cache: median (whiskers min..max)")
    right, rh = panel(cold, width + 20, width, f"{tree}, cold cache: median (whiskers min..max)")
    h = max(lh, rh) + 30
    legend = (
        f'<text x="10" y="{h - 8}" fill="#495057">{escape(date)} · orange: traverse engines · '
        "blue: size peers · light blue: names only · grey: single-threaded syscall floor</text>"
    )
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * width + 30}" height="{h}" '
        'font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        *left,
        *right,
        legend,
        "</svg>",
    ]
    with open(os.path.join(run, f"chart-{tree}.svg"), "w") as f:
        f.write("\n".join(svg) + "\n")


def splice(doc, text):
    old = open(doc).read() if os.path.exists(doc) else "# Benchmarks\n"
    block = f"{BEGIN}\n{text}\n{END}"
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        new = head + block + rest.split(END, 1)[1]
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    with open(doc, "w") as f:
        f.write(new)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: report.py RUN_DIR [DOC.md]")
    run = sys.argv[1]
    meta = load(os.path.join(run, "meta.json"))
    chk = checks(run)
    name = os.path.basename(os.path.normpath(run))
    out = [f"Generated by `benches/compare` from [bench-runs/{name}](bench-runs/{name}/) (raw hyperfine JSON, checks.tsv).\n"]
    # One environment block per distinct run: trees timed by the same invocation share it.
    envs = {}
    for tree in TREES:
        env = os.path.join(run, f"env-{tree}.md")
        if os.path.exists(env):
            envs.setdefault(open(env).read(), []).append(tree)
    for text, trees in envs.items():
        out.append(f"#### Run environment ({', '.join(trees)})\n")
        out.append(text)
    # The run's summary has every table; the document leaves out the
    # per-tree targets, which its own "Where the targets stand" sums up.
    doc = list(out)
    for tree in TREES:
        text, warm, cold = size_table(run, tree, chk)
        if warm or cold:
            chart(run, tree, warm, cold, meta["date"])
            text += f"\n![{tree}](bench-runs/{name}/chart-{tree}.svg)\n"
        tables = [text if warm or cold else None, list_table(run, tree), breakdown_table(run, tree)] + du_tables(run, tree)
        tables = [t for t in tables if t]
        out.extend(tables)
        doc.extend(tables)
        tt = targets(run, tree)
        if tt:
            out.append(tt)
    legend = (
        "Total column: ✓ equals `du -sb`/`du -sB1` (or find's count); ≈¹ a documented difference "
        "(gdu counts directories as 4 096 bytes, dua leaves out the root directory, `diskus -b` leaves "
        "out directories); ? not checked; ✗ an unexplained difference (see checks.tsv).\n"
    )
    out.append(legend)
    doc.append(legend)
    doc.append(f"Each tree's targets, met or missed: [summary.md](bench-runs/{name}/summary.md) of the run.\n")
    text = "\n".join(out)
    with open(os.path.join(run, "summary.md"), "w") as f:
        f.write(text)
    if len(sys.argv) == 3:
        splice(sys.argv[2], "\n".join(doc))


if __name__ == "__main__":
    main()
