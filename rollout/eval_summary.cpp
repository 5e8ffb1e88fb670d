#include "rollout/eval_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "messages/bench_codec.h"

namespace cuda_agent {
namespace {

bool better(const EvalEpisodeResult& a, const EvalEpisodeResult& b) {
  if (a.aborted != b.aborted) return b.aborted;  // a scored episode beats an aborted one
  if (a.reward_tier != b.reward_tier) return a.reward_tier > b.reward_tier;
  return a.speedup_vs_compile > b.speedup_vs_compile;
}

void add(EvalFigures& f, const EvalEpisodeResult& r, double& log_eager, std::size_t& n_eager,
         double& log_compile, std::size_t& n_compile) {
  ++f.tasks;
  ++f.tiers[r.aborted ? -1 : r.reward_tier];  // a task with no scored episode failed
  if (!r.correct) return;
  ++f.correct;
  if (r.constant_output || r.output_unverified) return;  // a stored answer would pass: no speed
  if (r.speedup_vs_eager > 1) ++f.faster_than_eager;
  if (r.speedup_vs_compile > 1) ++f.faster_than_compile;
  if (r.speedup_vs_eager > 0) {
    log_eager += std::log(r.speedup_vs_eager);
    ++n_eager;
  }
  if (r.speedup_vs_compile > 0) {
    log_compile += std::log(r.speedup_vs_compile);
    ++n_compile;
  }
}

EvalFigures figures(const std::vector<const EvalEpisodeResult*>& results) {
  EvalFigures f;
  double le = 0, lc = 0;
  std::size_t ne = 0, nc = 0;
  for (const auto* r : results) add(f, *r, le, ne, lc, nc);
  f.geomean_vs_eager = ne ? std::exp(le / double(ne)) : 0;
  f.geomean_vs_compile = nc ? std::exp(lc / double(nc)) : 0;
  return f;
}

std::string percent(std::size_t n, std::size_t of) {
  return of ? fmt::format("{:.1f}% ({}/{})", 100.0 * double(n) / double(of), n, of) : "-";
}

std::string ratio(double x) { return x > 0 ? fmt::format("{:.2f}x", x) : "-"; }

std::string row(const std::string& name, const EvalFigures& f) {
  return fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", name, f.tasks,
                     percent(f.correct, f.tasks), percent(f.faster_than_eager, f.tasks),
                     percent(f.faster_than_compile, f.tasks), ratio(f.geomean_vs_eager),
                     ratio(f.geomean_vs_compile));
}

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Histogram of log2(speedup vs compile) over correct tasks, bins of 0.5 from -3 to +4.
std::string histogram_svg(const EvalSummary& s) {
  constexpr double kLo = -3, kHi = 4, kBin = 0.5;
  const int bins = static_cast<int>((kHi - kLo) / kBin);
  std::vector<int> count(static_cast<std::size_t>(bins), 0);
  for (const auto& r : s.best_per_task) {
    if (!r.correct || r.speedup_vs_compile <= 0) continue;
    const double x = std::clamp(std::log2(r.speedup_vs_compile), kLo, kHi - 1e-9);
    ++count[static_cast<std::size_t>((x - kLo) / kBin)];
  }
  const int peak = std::max(1, *std::max_element(count.begin(), count.end()));
  constexpr int kW = 28, kH = 160;
  std::string svg = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' font-size='10'>\n",
      bins * kW + 40, kH + 40);
  for (int b = 0; b < bins; ++b) {
    const int h = count[static_cast<std::size_t>(b)] * kH / peak;
    const double lo = kLo + b * kBin;
    svg += fmt::format(
        "<rect x='{}' y='{}' width='{}' height='{}' fill='{}'><title>{} tasks with "
        "speedup {:.2f}x-{:.2f}x</title></rect>\n",
        20 + b * kW, 10 + kH - h, kW - 2, h, lo >= 0 ? "#2a7" : "#c44",
        count[static_cast<std::size_t>(b)], std::exp2(lo), std::exp2(lo + kBin));
    if (b % 2 == 0)
      svg +=
          fmt::format("<text x='{}' y='{}'>{:.2g}x</text>\n", 20 + b * kW, kH + 25, std::exp2(lo));
  }
  return svg + "</svg>\n";
}

// One bar per task: log2 speedup vs compile (grey: incorrect).
std::string bars_svg(const EvalSummary& s) {
  constexpr int kRow = 14, kMid = 420, kScale = 60;
  std::string svg = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='760' height='{}' font-size='10'>\n",
      static_cast<int>(s.best_per_task.size()) * kRow + 10);
  svg += fmt::format("<line x1='{0}' y1='0' x2='{0}' y2='{1}' stroke='#000'/>\n", kMid,
                     static_cast<int>(s.best_per_task.size()) * kRow + 10);
  int y = 5;
  for (const auto& r : s.best_per_task) {
    svg +=
        fmt::format("<text x='0' y='{}'>{}</text>\n", y + 10, escape_html(r.task_id.substr(0, 60)));
    if (r.correct && r.speedup_vs_compile > 0) {
      const int w =
          static_cast<int>(std::clamp(std::log2(r.speedup_vs_compile), -5.0, 5.0) * kScale);
      svg += fmt::format(
          "<rect x='{}' y='{}' width='{}' height='{}' fill='{}'><title>{:.2f}x vs "
          "compile, {:.2f}x vs eager</title></rect>\n",
          w >= 0 ? kMid : kMid + w, y, std::abs(w) + 1, kRow - 3, w >= 0 ? "#2a7" : "#c44",
          r.speedup_vs_compile, r.speedup_vs_eager);
    } else {
      svg += fmt::format("<text x='{}' y='{}' fill='#888'>{}</text>\n", kMid + 4, y + 10,
                         r.correct ? "correct, not timed" : "failed");
    }
    y += kRow;
  }
  return svg + "</svg>\n";
}

// "Over all N episodes: mean reward ..., positive reward ...%." and the aborted ones, not scored.
std::string episodes_line(const EvalSummary& s) {
  std::string line = fmt::format("Over all {} episodes", s.episodes);
  if (s.aborted > 0)
    line += fmt::format(" ({} aborted by a failed policy server or tool: not scored)", s.aborted);
  return line + fmt::format(": mean reward {:+.3f}, positive reward {:.1f}%.", s.mean_reward,
                            100.0 * s.positive_rate);
}

// The tasks whose output ignores their inputs, hardened or flagged; "\n" when there are none.
std::string task_flags_text(const EvalSummary& s) {
  auto list = [](const std::vector<std::string>& ids) {
    std::string out;
    for (const auto& id : ids) out += (out.empty() ? "" : ", ") + id;
    return out;
  };
  std::string text;
  if (!s.hardened_tasks.empty())
    text += fmt::format(
        "\nHardened ({} tasks whose output ignores their inputs; every solution was also checked "
        "with re-drawn weights): {}.\n",
        s.hardened_tasks.size(), list(s.hardened_tasks));
  if (!s.constant_tasks.empty())
    text += fmt::format(
        "\nConstant output, no speed credit ({} tasks whose output depends neither on their "
        "inputs nor on their weights, so a stored answer would pass; counted in the pass rate "
        "only): {}.\n",
        s.constant_tasks.size(), list(s.constant_tasks));
  return text + "\n";
}

}  // namespace

void note_task_checks(EvalEpisodeResult& r, const std::vector<std::string>& checks_run) {
  for (const std::string& c : checks_run) {
    if (c.rfind("weights[", 0) == 0 || c.rfind("inputs[", 0) == 0) r.hardened = true;
    if (c == kConstantOutputTask) r.constant_output = true;
    if (c == kOutputUnverified) r.output_unverified = r.hardened = true;  // its check failed
  }
}

EvalSummary summarize(const std::vector<EvalEpisodeResult>& episodes) {
  std::map<std::string, EvalEpisodeResult> best;
  for (const auto& e : episodes) {
    auto [it, inserted] = best.emplace(e.task_id, e);
    if (!inserted && better(e, it->second)) it->second = e;
  }
  for (const auto& e : episodes) {  // what the bench found about a task holds for every episode
    EvalEpisodeResult& b = best.at(e.task_id);
    b.hardened = b.hardened || e.hardened;
    b.constant_output = b.constant_output || e.constant_output;
  }
  EvalSummary s;
  s.episodes = episodes.size();
  std::size_t positive = 0;
  for (const auto& e : episodes) {
    if (e.aborted) {
      ++s.aborted;
      continue;
    }
    s.mean_reward += e.reward_tier;
    positive += e.reward_tier > 0 ? 1 : 0;
  }
  if (const std::size_t scored = s.episodes - s.aborted; scored > 0) {
    s.mean_reward /= double(scored);
    s.positive_rate = double(positive) / double(scored);
  }
  std::vector<const EvalEpisodeResult*> all;
  std::map<std::string, std::vector<const EvalEpisodeResult*>> by_subset;
  for (const auto& [id, r] : best) s.best_per_task.push_back(r);
  for (const auto& r : s.best_per_task) {
    all.push_back(&r);
    by_subset[r.subset].push_back(&r);
  }
  for (const auto& [id, r] : best) {
    if (r.constant_output)
      s.constant_tasks.push_back(id);
    else if (r.hardened)
      s.hardened_tasks.push_back(id);
  }
  s.overall = figures(all);
  if (!(by_subset.size() == 1 && by_subset.count("")))
    for (const auto& [name, rs] : by_subset)
      s.subsets[name.empty() ? "(none)" : name] = figures(rs);
  return s;
}

std::string render_markdown(const EvalSummary& s, const std::string& title) {
  std::string md = "# " + title + "\n\n";
  md +=
      "| subset | tasks | pass rate | faster than eager | faster than compile | geomean vs eager | "
      "geomean vs compile |\n|---|---|---|---|---|---|---|\n";
  for (const auto& [name, f] : s.subsets) md += row(name, f);
  md += row("**all**", s.overall);
  md += "\n" + episodes_line(s) + "\n";
  md += "\nReward tiers (best episode per task): ";
  bool first = true;
  for (int tier : {-1, 1, 2, 3}) {
    auto it = s.overall.tiers.find(tier);
    md += fmt::format("{}{:+d}: {}", first ? "" : ", ", tier,
                      it == s.overall.tiers.end() ? 0 : it->second);
    first = false;
  }
  md += "\n" + task_flags_text(s);
  md +=
      "Definitions (CUDA Agent's Table 1): pass rate = tasks whose best solution is correct "
      "/ tasks; faster than eager (compile) = tasks correct with speedup > 1 over PyTorch eager "
      "(torch.compile) / tasks; geomean = geometric mean of the speedups over correct, timed "
      "tasks. A task's result is its best episode (highest reward tier, then highest speedup vs "
      "compile).\n";
  return md;
}

std::string render_html(const EvalSummary& s, const std::string& title) {
  std::string html = "<!doctype html><html><head><meta charset='utf-8'><title>" +
                     escape_html(title) +
                     "</title><style>body{font-family:sans-serif;max-width:60em;margin:2em}"
                     "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px}"
                     "</style></head><body>\n<h1>" +
                     escape_html(title) +
                     "</h1>\n<table><tr><th>subset</th><th>tasks</th>"
                     "<th>pass rate</th><th>faster than eager</th><th>faster than compile</th>"
                     "<th>geomean vs eager</th><th>geomean vs compile</th></tr>\n";
  auto html_row = [](const std::string& name, const EvalFigures& f) {
    return fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        escape_html(name), f.tasks, percent(f.correct, f.tasks),
        percent(f.faster_than_eager, f.tasks), percent(f.faster_than_compile, f.tasks),
        ratio(f.geomean_vs_eager), ratio(f.geomean_vs_compile));
  };
  for (const auto& [name, f] : s.subsets) html += html_row(name, f);
  html += html_row("all", s.overall) + "</table>\n";
  html += "<p>" + episodes_line(s) + "</p>\n";
  if (const std::string flags = task_flags_text(s); flags.size() > 1)
    html += "<p>" + escape_html(flags) + "</p>\n";
  html += "<h2>Speedup vs torch.compile over correct tasks (log2 bins)</h2>\n" + histogram_svg(s);
  html += "<h2>Per task: speedup vs torch.compile (log scale)</h2>\n" + bars_svg(s);
  return html + "</body></html>\n";
}

}  // namespace cuda_agent
