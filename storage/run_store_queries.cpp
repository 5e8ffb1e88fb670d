// RunStore queries: scans for replay, RFT selection, best verified solutions, runs, checkpoints,
// metrics and summary statistics. Every episode query reads the indexes' EpisodeSummary values,
// never the episodes' trajectories.
#include <algorithm>
#include <map>

#include "storage/run_store_impl.h"

namespace cuda_agent {
namespace {

using store_keys::Cf;
using store_keys::Index;

Error bad_index_key(const RunStore::Impl& impl, std::string_view key) {
  return make_error(ErrorCategory::kIo, "store.corrupt_key",
                    impl.where(Cf::kIndexes, key) + ": malformed index key");
}

std::string index_start(Index index) { return std::string(1, static_cast<char>(index)); }

// Number of keys in [prefix, prefix_end(prefix)) of `cf`.
Expected<std::uint64_t> count_keys(const RunStore::Impl& impl, Cf cf, const std::string& prefix) {
  std::uint64_t n = 0;
  Cursor c(impl, cf, prefix, store_keys::prefix_end(prefix));
  for (; c.valid(); c.next()) ++n;
  RETURN_IF_ERROR(c.status());
  return n;
}

}  // namespace

void RewardHistogram::add(double reward) {
  const auto bin = std::upper_bound(edges.begin(), edges.end(), reward) - edges.begin();
  if (counts.size() != edges.size() + 1) counts.assign(edges.size() + 1, 0);
  ++counts[static_cast<std::size_t>(bin)];
}

Status RunStore::scan_run(const RunId& run, const SummaryVisitor& visit) const {
  return scan_summaries(*impl_, store_keys::index_prefix(Index::kEpisodeByRun, run.value()), "",
                        visit);
}

Status RunStore::scan_replay(const ReplayQuery& q, const SummaryVisitor& visit) const {
  std::string prefix;
  if (q.stage) {
    prefix = store_keys::index_prefix(Index::kEpisodeByStage, q.run.value());
    prefix.push_back(static_cast<char>(*q.stage));
  } else {
    prefix = store_keys::index_prefix(Index::kEpisodeByPolicy, q.run.value());
  }
  std::string start = prefix;
  store_keys::append_be64(start, q.min_policy.value());
  return scan_summaries(*impl_, prefix, start, [&](const EpisodeSummary& s) {
    if (s.policy_version > q.max_policy) return false;  // ordered by policy version
    return visit(s);
  });
}

Status RunStore::scan_task(const TaskId& task, const SummaryVisitor& visit) const {
  return scan_summaries(*impl_, store_keys::index_prefix(Index::kEpisodeByTask, task.value()), "",
                        visit);
}

Expected<std::vector<EpisodeSummary>> RunStore::select_rft(const RftQuery& q) const {
  RETURN_IF_ERROR(store_keys::check_id(q.run.value(), "run id"));
  std::vector<EpisodeSummary> out;
  if (q.per_task_top_k == 0) return out;
  // Keys: run | 00 | task | 00 | reward desc8 | tokens BE8 | episode. Within a task the best come
  // first, so a task is left as soon as it has k episodes or the rewards fall to min_reward.
  const std::string run_prefix = store_keys::index_prefix(Index::kEpisodeByReward, q.run.value());
  Cursor c(*impl_, Cf::kIndexes, run_prefix, store_keys::prefix_end(run_prefix));
  std::string task;
  std::uint32_t taken = 0;
  while (c.valid()) {
    const std::string_view key = c.key();
    const std::size_t sep = key.find('\0', run_prefix.size());
    if (sep == std::string_view::npos || key.size() < sep + 1 + 16) {
      return bad_index_key(*impl_, key);
    }
    const std::string_view key_task = key.substr(run_prefix.size(), sep - run_prefix.size());
    if (key_task != task) {
      task.assign(key_task);
      taken = 0;
    }
    const double reward =
        store_keys::from_descending_double(store_keys::read_be64(key.substr(sep + 1, 8)));
    if (taken >= q.per_task_top_k || !(reward > q.min_reward)) {
      c.seek(store_keys::prefix_end(run_prefix + task + '\0'));  // on to the next task
      continue;
    }
    EpisodeSummary s;
    RETURN_IF_ERROR(impl_->decode(Cf::kIndexes, key, c.value(), &s));
    const bool keep = (!q.stage || s.stage == *q.stage) &&
                      (!q.completed_only || s.status == EpisodeStatus::kCompleted) &&
                      s.invalid_tool_calls <= q.max_invalid_tool_calls && s.turns >= q.min_turns &&
                      s.turns <= q.max_turns && s.wasted_loops <= q.max_wasted_loops;
    if (keep) {
      out.push_back(std::move(s));
      ++taken;
    }
    c.next();
  }
  RETURN_IF_ERROR(c.status());
  return out;
}

Expected<std::optional<EvaluationRecord>> RunStore::best_verified(const TaskId& task) const {
  const std::string prefix = store_keys::index_prefix(Index::kBestVerified, task.value());
  Cursor c(*impl_, Cf::kIndexes, prefix, store_keys::prefix_end(prefix));
  if (!c.valid()) {
    RETURN_IF_ERROR(c.status());
    return std::optional<EvaluationRecord>();
  }
  const std::string_view id = store_keys::evaluation_of_index_key(c.key());
  if (id.empty()) return bad_index_key(*impl_, c.key());
  ASSIGN_OR_RETURN(EvaluationRecord e, get_evaluation(EvaluationId{std::string(id)}));
  return std::optional<EvaluationRecord>(std::move(e));
}

Expected<std::vector<EvaluationRecord>> RunStore::best_verified_per_task() const {
  std::vector<EvaluationRecord> out;
  const std::string all = index_start(Index::kBestVerified);
  Cursor c(*impl_, Cf::kIndexes, all, store_keys::prefix_end(all));
  while (c.valid()) {
    const std::string_view task = store_keys::part(c.key(), 0);
    const std::string_view id = store_keys::evaluation_of_index_key(c.key());
    if (task.empty() || id.empty()) return bad_index_key(*impl_, c.key());
    ASSIGN_OR_RETURN(EvaluationRecord e, get_evaluation(EvaluationId{std::string(id)}));
    out.push_back(std::move(e));
    c.seek(store_keys::prefix_end(store_keys::index_prefix(Index::kBestVerified, task)));
  }
  RETURN_IF_ERROR(c.status());
  return out;
}

Status RunStore::scan_tasks(const TaskScan& scan, const TaskVisitor& visit) const {
  const std::string upper = scan.id_prefix.empty() ? "" : store_keys::prefix_end(scan.id_prefix);
  Cursor c(*impl_, Cf::kTasks, scan.id_prefix, upper);
  for (; c.valid(); c.next()) {
    TaskRecord t;
    RETURN_IF_ERROR(impl_->decode(Cf::kTasks, c.key(), c.value(), &t));
    if (scan.suite && t.suite != *scan.suite) continue;
    if (!visit(t)) return Status::ok();
  }
  return c.status();
}

Status RunStore::scan_attempts(
    const RunId& run, std::string_view episode,
    const std::function<bool(const EpisodeAttemptRecord&)>& visit) const {
  if (!impl_->view()->cf(Cf::kAttempts)) return Status::ok();  // an older store read as it is
  const std::string prefix = store_keys::attempt_prefix(run, episode);
  Cursor c(*impl_, Cf::kAttempts, prefix, store_keys::prefix_end(prefix));
  for (; c.valid(); c.next()) {
    EpisodeAttemptRecord a;
    RETURN_IF_ERROR(impl_->decode(Cf::kAttempts, c.key(), c.value(), &a));
    if (!visit(a)) return Status::ok();
  }
  return c.status();
}

Expected<std::vector<RunSummary>> RunStore::list_runs() const {
  std::map<std::string, RunSummary> runs;
  {
    Cursor c(*impl_, Cf::kRuns, "", "");
    for (; c.valid(); c.next()) {
      RunRecord r;
      RETURN_IF_ERROR(impl_->decode(Cf::kRuns, c.key(), c.value(), &r));
      RunSummary& s = runs[std::string(c.key())];
      s.run = RunId{std::string(c.key())};
      s.record = std::move(r);
    }
    RETURN_IF_ERROR(c.status());
  }
  // Runs with episodes but no metadata record are listed too.
  const std::string all = index_start(Index::kEpisodeByRun);
  Cursor c(*impl_, Cf::kIndexes, all, store_keys::prefix_end(all));
  for (; c.valid(); c.next()) {
    const std::string_view run = store_keys::part(c.key(), 0);
    if (run.empty()) return bad_index_key(*impl_, c.key());
    RunSummary& s = runs[std::string(run)];
    if (s.run.value().empty()) s.run = RunId{std::string(run)};
    ++s.episodes;
  }
  RETURN_IF_ERROR(c.status());
  std::vector<RunSummary> out;
  for (auto& [id, s] : runs) out.push_back(std::move(s));
  return out;
}

Expected<std::vector<CheckpointRecord>> RunStore::list_checkpoints(const RunId& run) const {
  std::vector<CheckpointRecord> out;
  const std::string prefix = run.value() + '\0';
  Cursor c(*impl_, Cf::kCheckpoints, prefix, store_keys::prefix_end(prefix));
  for (; c.valid(); c.next()) {
    CheckpointRecord r;
    RETURN_IF_ERROR(impl_->decode(Cf::kCheckpoints, c.key(), c.value(), &r));
    out.push_back(std::move(r));
  }
  RETURN_IF_ERROR(c.status());
  return out;
}

Status RunStore::scan_metrics(const RunId& run, std::string_view name, std::uint64_t from_step,
                              const std::function<bool(const MetricRecord&)>& visit) const {
  std::string prefix = run.value() + '\0';
  prefix.append(name);
  prefix.push_back('\0');
  std::string start = prefix;
  store_keys::append_be64(start, from_step);
  Cursor c(*impl_, Cf::kMetrics, start, store_keys::prefix_end(prefix));
  for (; c.valid(); c.next()) {
    MetricRecord m;
    RETURN_IF_ERROR(impl_->decode(Cf::kMetrics, c.key(), c.value(), &m));
    if (!visit(m)) return Status::ok();
  }
  return c.status();
}

Expected<std::uint64_t> RunStore::count_episodes(const std::optional<RunId>& run) const {
  return count_keys(*impl_, Cf::kIndexes,
                    run ? store_keys::index_prefix(Index::kEpisodeByRun, run->value())
                        : index_start(Index::kEpisodeById));
}

Expected<StoreStats> RunStore::stats(const std::optional<RunId>& run) const {
  StoreStats st;
  const std::string prefix = run ? store_keys::index_prefix(Index::kEpisodeByRun, run->value())
                                 : index_start(Index::kEpisodeById);
  RETURN_IF_ERROR(scan_summaries(*impl_, prefix, "", [&](const EpisodeSummary& s) {
    ++st.episodes;
    ++st.by_status[std::string(to_string(s.status))];
    ++st.by_stage[to_string(s.stage)];
    st.rewards.add(s.final_reward);
    if (!st.best_reward || s.final_reward > *st.best_reward) st.best_reward = s.final_reward;
    st.trajectory_bytes += s.trajectory_size;
    return true;
  }));
  const std::shared_ptr<DbView> v = impl_->view();
  for (int i = 0; i < static_cast<int>(Cf::kCount); ++i) {
    ColumnFamilySize size;
    size.name = store_keys::cf_name(static_cast<Cf>(i));
    rocksdb::ColumnFamilyHandle* h = v->handles[i];
    if (!h) continue;  // a later family an older store (read as it is) lacks
    v->db->GetIntProperty(h, "rocksdb.total-sst-files-size", &size.sst_bytes);
    v->db->GetIntProperty(h, "rocksdb.total-blob-file-size", &size.blob_bytes);
    v->db->GetIntProperty(h, "rocksdb.cur-size-all-mem-tables", &size.memtable_bytes);
    v->db->GetIntProperty(h, "rocksdb.estimate-num-keys", &size.estimated_keys);
    st.column_families.push_back(std::move(size));
  }
  st.disk_bytes = directory_bytes(impl_->options.dir);
  return st;
}

}  // namespace cuda_agent
