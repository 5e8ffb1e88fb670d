#!/usr/bin/env python3
"""The reward-rises demonstration's HTML report (issue 25), with its plots as inline SVG images.

Usage: scripts/demo_report.py --out report.html [--status status.json] [--train-log train.txt]
           [--warmup-metrics warmup.jsonl] [--eval NAME=episodes.jsonl]... [--title TEXT]

--status: `cuda-agent train status --json` of the run (reward by policy version, its tiers);
--train-log: `cuda-agent train`'s output (set-up step and stage times);
--warmup-metrics: the supervised warm-up's metrics lines (loss by step);
--eval NAME=FILE: `cuda-agent eval` episodes of one checkpoint on the held-out tasks, in order
(the first is the baseline every other is compared with: scripts/demo_compare.py's figures).
Every plot says what it shows; a missing input leaves its section out and says so.
"""
import argparse
import html
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import demo_compare  # noqa: E402

W, H, PAD = 560, 260, 44


def stage_times(text):
    """Per `cuda-agent train` invocation in `text` (one or several calls' output, each starting
    with its "cuda-agent train: run" line): its set-up steps [(what, seconds)], the first progress
    line of each stage {stage: seconds from the start of RL}, and its RL seconds (to "finished in",
    else to its last progress line) with whether it finished the run."""
    calls = [c for c in re.split(r"(?m)^(?=cuda-agent train: run )", text) if c.strip()]
    out = []
    for c in calls:
        rows = [(w, float(s)) for w, s in re.findall(r"^(.*?)\n  done in ([0-9.]+) s", c, re.M)]
        stages = {}
        last = 0
        for t, stage in re.findall(r"\[\s*(\d+)s\] stage (\S+)", c):
            stages.setdefault(stage, int(t))
            last = max(last, int(t))
        fin = re.search(r"finished in (\d+) s", c)
        out.append({"setup": rows, "stages": stages, "rl_s": int(fin.group(1)) if fin else last,
                    "finished": bool(fin)})
    return out


def stage_times_html(text):
    calls = stage_times(text)
    parts = ["<h2>Stage times</h2><table border=1 cellpadding=3>"
             "<tr><th>call</th><th>step</th><th>seconds</th></tr>"]
    total = 0.0
    for i, c in enumerate(calls, 1):
        for what, secs in c["setup"]:
            parts.append("<tr><td>%d</td><td>%s</td><td>%.1f</td></tr>" % (i, html.escape(what), secs))
            total += secs
        for stage, t in sorted(c["stages"].items(), key=lambda kv: kv[1]):
            parts.append("<tr><td>%d</td><td>first progress line of stage %s (from this call's "
                         "start of RL)</td><td>%d</td></tr>" % (i, html.escape(stage), t))
        parts.append("<tr><td>%d</td><td>RL in this call (%s)</td><td>%d</td></tr>"
                     % (i, "the run finished" if c["finished"] else "stopped, to its last progress line",
                        c["rl_s"]))
        total += c["rl_s"]
    parts.append("</table><p>Training over %d call(s): <b>%.0f s</b> of set-up steps and RL "
                 "(starting the roles and the time between calls not counted).</p>"
                 % (len(calls), total))
    return "\n".join(parts)


def svg_line(points, title, xlabel, ylabel, ymin=None, ymax=None):
    if not points:
        return "<p>(no data for %s)</p>" % html.escape(title)
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0 = min(ys) if ymin is None else ymin
    y1 = max(ys) if ymax is None else ymax
    if y1 <= y0:
        y1 = y0 + 1

    def sx(x):
        return PAD + (x - x0) / (x1 - x0) * (W - 2 * PAD)

    def sy(y):
        return H - PAD - (y - y0) / (y1 - y0) * (H - 2 * PAD)

    path = " ".join("%.1f,%.1f" % (sx(x), sy(y)) for x, y in points)
    dots = "".join('<circle cx="%.1f" cy="%.1f" r="2.5"/>' % (sx(x), sy(y)) for x, y in points)
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-size="11">'
            '<text x="%d" y="14" font-weight="bold">%s</text>'
            '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>'
            '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>'
            '<text x="%d" y="%d">%s</text><text x="4" y="%d">%s</text>'
            '<text x="4" y="%.1f">%.3g</text><text x="4" y="%.1f">%.3g</text>'
            '<text x="%d" y="%d">%g</text><text x="%d" y="%d">%g</text>'
            '<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="%s"/>'
            '<g fill="#1f77b4">%s</g></svg>') % (
        W, H, PAD, html.escape(title), PAD, H - PAD, W - PAD, H - PAD, PAD, PAD, PAD, H - PAD,
        W // 2, H - 8, html.escape(xlabel), PAD - 8, html.escape(ylabel), sy(y1) + 4, y1,
        sy(y0) + 4, y0, PAD, H - PAD + 14, x0, W - PAD - 10, H - PAD + 14, x1, path, dots)


def svg_tiers(histograms, title):
    """Grouped bars: for each checkpoint, the share of episodes at each reward tier."""
    if not histograms:
        return "<p>(no evaluation for %s)</p>" % html.escape(title)
    tiers = sorted({t for h in histograms.values() for t in h})
    names = list(histograms)
    colours = ["#7f7f7f", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]
    group_w = (W - 2 * PAD) / max(1, len(tiers))
    bar_w = group_w * 0.8 / max(1, len(names))
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-size="11">' % (W, H),
           '<text x="%d" y="14" font-weight="bold">%s</text>' % (PAD, html.escape(title)),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (PAD, H - PAD, W - PAD, H - PAD)]
    for ti, t in enumerate(tiers):
        gx = PAD + ti * group_w + group_w * 0.1
        out.append('<text x="%.1f" y="%d">tier %+g</text>' % (gx, H - PAD + 14, t))
        for ni, n in enumerate(names):
            h = histograms[n]
            total = sum(h.values()) or 1
            share = h.get(t, 0) / total
            bh = share * (H - 2 * PAD)
            out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>' %
                       (gx + ni * bar_w, H - PAD - bh, bar_w, bh, colours[ni % len(colours)]))
    for ni, n in enumerate(names):
        out.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>' %
                   (W - 150, 24 + 14 * ni, colours[ni % len(colours)], W - 135, 33 + 14 * ni,
                    html.escape(n)))
    out.append('<text x="4" y="%d">share of episodes</text></svg>' % (PAD - 8))
    return "".join(out)


def baselines_text(manifest_path):
    """How the rewards' eager and torch.compile baselines were timed, from [bench]."""
    import tomllib
    with open(manifest_path, "rb") as f:
        m = tomllib.load(f)
    if m.get("rollout", {}).get("reward") == "compile-only":
        return "Baselines: none (compile-only reward: nothing was timed)."
    bench = m.get("bench", {})
    if bench.get("final_reuses_baselines", False):
        return ("Baselines: reused per task ([bench] final_reuses_baselines): eager and "
                "torch.compile were timed when the bench first met a task, in training and in "
                "each evaluation, and their medians reused for its later rewards.")
    return ("Baselines: every reward timed eager and torch.compile beside the candidate "
            "(re-measured each time).")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--status")
    ap.add_argument("--train-log")
    ap.add_argument("--warmup-metrics")
    ap.add_argument("--eval", action="append", default=[])
    ap.add_argument("--title", default="cuda-agent: reward rises (issue 25)")
    ap.add_argument("--manifest", help="the run's manifest.toml: says how baselines were timed")
    ap.add_argument("--times", help="scripts/demo_times.py's output: where episodes spent time")
    a = ap.parse_args()
    parts = ["<html><head><meta charset='utf-8'><title>%s</title></head><body>" % html.escape(a.title),
             "<h1>%s</h1>" % html.escape(a.title)]

    reward_kind = None
    if a.status and os.path.exists(a.status):
        st = json.load(open(a.status))
        reward_kind = st.get("reward")
        parts.append("<p>Run <b>%s</b>: %s, step %s, policy version %s, %s episodes trained, "
                     "reward <b>%s</b>.</p>" % tuple(html.escape(str(st.get(k))) for k in
                                                   ("run", "state", "step", "policy_version",
                                                    "trained", "reward")))
        pts = [(v["version"], v["mean_reward"]) for v in st.get("by_version", [])]
        parts.append(svg_line(pts, "Training: mean reward by policy version", "policy version",
                              "mean reward"))
    else:
        parts.append("<p>(no train status given)</p>")

    if a.train_log and os.path.exists(a.train_log):
        parts.append(stage_times_html(open(a.train_log, errors="replace").read()))

    if a.manifest and os.path.exists(a.manifest):
        parts.append("<p>%s</p>" % html.escape(baselines_text(a.manifest)))
    if a.times and os.path.exists(a.times):
        parts.append("<h2>Where the episodes spent their time</h2><pre>%s</pre>"
                     % html.escape(open(a.times, errors="replace").read()))

    if a.warmup_metrics and os.path.exists(a.warmup_metrics):
        pts = []
        for i, line in enumerate(open(a.warmup_metrics)):
            try:
                m = json.loads(line)
            except ValueError:
                continue
            loss = m.get("loss", m.get("sft_loss"))
            if loss is not None:
                pts.append((m.get("step", i + 1), float(loss)))
        parts.append(svg_line(pts, "Supervised warm-up on the corpus: loss by step", "step", "loss"))

    runs = []
    for spec in a.eval:
        name, _, path = spec.partition("=")
        if os.path.exists(path):
            runs.append((name, path))
        else:
            parts.append("<p>(evaluation %s: %s missing)</p>" % (html.escape(name), html.escape(path)))
    if runs:
        parts.append("<h2>Held-out tasks</h2>")
        if reward_kind == "compile-only":
            parts.append("<p><b>Compile-only reward</b>: +1 builds, -1 does not; nothing was run or timed.</p>")
        hist = {}
        loaded = {}
        for name, path in runs:
            loaded[name] = demo_compare.load(path)
            h = {}
            for rows in loaded[name].values():
                for r in rows:
                    t = float(r.get("reward", 0))
                    h[t] = h.get(t, 0) + 1
            hist[name] = h
        parts.append(svg_tiers(hist, "Reward tiers of every held-out episode, by checkpoint"))
        base_name = runs[0][0]
        parts.append("<table border=1 cellpadding=3><tr><th>checkpoint</th><th>episodes</th>"
                     "<th>mean reward</th><th>correct</th><th>faster than eager</th>"
                     "<th>with an invalid tool call</th><th>rewards with their stored record "
                     "(with its audit)</th><th>minus %s (95%% bootstrap over tasks)</th></tr>" % html.escape(base_name))
        for name, _ in runs:
            tasks = sorted(set(loaded[base_name]) & set(loaded[name]))
            s = demo_compare.stats([r for t in tasks for r in loaded[name][t]])
            diff = ""
            if name != base_name and tasks:
                c = demo_compare.compare(loaded[base_name], loaded[name])
                diff = "%+.3f (%+.3f .. %+.3f)" % (c["mean_reward_difference"], c["ci95"][0], c["ci95"][1])
            parts.append("<tr><td>%s</td><td>%d</td><td>%+.3f</td><td>%.2f</td><td>%.2f</td>"
                         "<td>%.2f</td><td>%d (%d)</td><td>%s</td></tr>" %
                         (html.escape(name), s["episodes"], s["mean_reward"], s["correct_rate"],
                          s["faster_than_eager_rate"], s["invalid_tool_call_rate"],
                          s["with_record"], s["with_audit"], diff))
        parts.append("</table>")
    parts.append("</body></html>")
    with open(a.out, "w") as f:
        f.write("\n".join(parts))
    print("report:", a.out)


if __name__ == "__main__":
    main()
