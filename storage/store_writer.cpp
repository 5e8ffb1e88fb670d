#include "storage/store_writer.h"

#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "storage/rocks_adapter.h"

namespace cuda_agent {
namespace {

using store_keys::Cf;

Status check_finite(double v, const std::string& what) {
  if (std::isfinite(v)) return Status::ok();
  return make_error(ErrorCategory::kInvalidInput, "store.bad_number", what + " is not finite");
}

void add(PreparedRecord& r, Cf cf, std::string key, std::string value) {
  r.entries.push_back({cf, std::move(key), std::move(value)});
}

Expected<PreparedRecord> prepare_episode(EpisodeRecord& e) {
  RETURN_IF_ERROR(store_keys::check_id(e.run_id.value(), "run id"));
  RETURN_IF_ERROR(store_keys::check_id(e.episode_id.value(), "episode id"));
  RETURN_IF_ERROR(store_keys::check_id(e.task_id.value(), "task id"));
  const std::string what = "episode " + e.run_id.value() + "/" + e.episode_id.value();
  RETURN_IF_ERROR(check_finite(e.final_reward, what + ": final reward"));
  EpisodeSummary s = e;
  s.trajectory_size = e.trajectory_bytes.size();
  const std::string summary = encode_store_value(s);
  PreparedRecord r;
  r.unique = true;
  r.unique_cf = Cf::kIndexes;
  r.unique_key = store_keys::episode_by_id_key(s.episode_id, s.run_id);
  r.unique_value = summary;
  r.what = what;
  add(r, Cf::kEpisodes, store_keys::episode_key(s.run_id, s.episode_id), encode_store_value(e));
  std::string().swap(e.trajectory_bytes);  // encoded: release the caller's copy early
  add(r, Cf::kIndexes, r.unique_key, summary);
  add(r, Cf::kIndexes, store_keys::episode_by_run_key(s), summary);
  add(r, Cf::kIndexes, store_keys::episode_by_stage_key(s), summary);
  add(r, Cf::kIndexes, store_keys::episode_by_task_key(s), summary);
  add(r, Cf::kIndexes, store_keys::episode_by_reward_key(s), summary);
  add(r, Cf::kIndexes, store_keys::episode_by_policy_key(s), summary);
  return r;
}

Expected<PreparedRecord> prepare_evaluation(const EvaluationRecord& e) {
  RETURN_IF_ERROR(store_keys::check_id(e.evaluation_id.value(), "evaluation id"));
  RETURN_IF_ERROR(store_keys::check_id(e.run_id.value(), "run id"));
  RETURN_IF_ERROR(store_keys::check_id(e.task_id.value(), "task id"));
  const std::string what = "evaluation " + e.evaluation_id.value();
  RETURN_IF_ERROR(check_finite(e.reward, what + ": reward"));
  RETURN_IF_ERROR(check_finite(e.speedup_vs_compile, what + ": speedup_vs_compile"));
  PreparedRecord r;
  r.unique = true;
  r.unique_cf = Cf::kEvaluations;
  r.unique_key = store_keys::evaluation_key(e.evaluation_id);
  r.unique_value = encode_store_value(e);
  r.what = what;
  add(r, Cf::kEvaluations, r.unique_key, r.unique_value);
  add(r, Cf::kIndexes, store_keys::evaluation_by_run_key(e), "");
  if (e.verified) add(r, Cf::kIndexes, store_keys::best_verified_key(e), "");
  return r;
}

template <class T>
PreparedRecord plain(Cf cf, std::string key, const T& value) {
  PreparedRecord r;
  add(r, cf, std::move(key), encode_store_value(value));
  return r;
}

}  // namespace

Expected<PreparedWrite> prepare_write(StoreWrite&& w) {
  using store_keys::check_id;
  PreparedWrite out;
  for (EpisodeRecord& e : w.episodes) {
    ASSIGN_OR_RETURN(PreparedRecord r, prepare_episode(e));
    out.records.push_back(std::move(r));
  }
  for (const EvaluationRecord& e : w.evaluations) {
    ASSIGN_OR_RETURN(PreparedRecord r, prepare_evaluation(e));
    out.records.push_back(std::move(r));
  }
  for (const TaskRecord& t : w.tasks) {
    RETURN_IF_ERROR(check_id(t.task_id.value(), "task id"));
    out.records.push_back(plain(Cf::kTasks, store_keys::task_key(t.task_id), t));
  }
  for (const BaselineRecord& b : w.baselines) {
    RETURN_IF_ERROR(check_id(b.task_id.value(), "task id"));
    for (const std::string* s : {&b.device, &b.torch_version}) {
      RETURN_IF_ERROR(check_id(*s, "baseline device and torch version"));
    }
    out.records.push_back(plain(Cf::kBaselines, store_keys::baseline_key(b), b));
  }
  for (const ArtifactRecord& a : w.artifacts) {
    RETURN_IF_ERROR(check_id(a.hash, "artifact hash"));
    out.records.push_back(plain(Cf::kArtifacts, store_keys::artifact_key(a.hash), a));
  }
  for (const RunRecord& r : w.runs) {
    RETURN_IF_ERROR(check_id(r.run_id.value(), "run id"));
    out.records.push_back(plain(Cf::kRuns, store_keys::run_key(r.run_id), r));
  }
  for (const CheckpointRecord& c : w.checkpoints) {
    RETURN_IF_ERROR(check_id(c.run_id.value(), "run id"));
    out.records.push_back(plain(Cf::kCheckpoints, store_keys::checkpoint_key(c.run_id, c.step), c));
  }
  for (const MetricRecord& m : w.metrics) {
    RETURN_IF_ERROR(check_id(m.run_id.value(), "run id"));
    RETURN_IF_ERROR(check_id(m.name, "metric name"));
    out.records.push_back(plain(Cf::kMetrics, store_keys::metric_key(m.run_id, m.name, m.step), m));
  }
  for (const EpisodeAttemptRecord& a : w.attempts) {
    RETURN_IF_ERROR(check_id(a.run_id.value(), "run id"));
    RETURN_IF_ERROR(check_id(a.episode_id.value(), "episode id"));
    RETURN_IF_ERROR(check_id(a.task_id.value(), "task id"));
    RETURN_IF_ERROR(check_id(a.worker_id.value(), "worker id"));
    if (a.attempt == 0) {
      return make_error(ErrorCategory::kInvalidInput, "store.bad_number",
                        "attempt of episode " + a.run_id.value() + "/" + a.episode_id.value() +
                            " is 0; attempts count from 1");
    }
    out.records.push_back(
        plain(Cf::kAttempts, store_keys::attempt_key(a.run_id, a.episode_id, a.attempt), a));
  }
  for (const PreparedRecord& r : out.records) {
    for (const PreparedEntry& e : r.entries) out.bytes += e.key.size() + e.value.size();
  }
  return out;
}

struct StoreWriter::Group {
  rocksdb::WriteBatch batch;
  std::vector<WriteCallback> written;                     // acknowledged with the batch's outcome
  std::vector<std::pair<WriteCallback, Status>> refused;  // failed without being written
  std::unordered_map<std::string, std::string> staged;    // unique cf+key -> value in this batch
  std::size_t bytes = 0;
};

StoreWriter::StoreWriter(rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*> handles,
                         WriterLimits limits)
    : db_(db), handles_(std::move(handles)), limits_(limits) {
  thread_ = std::thread([this] { run(); });
}

StoreWriter::~StoreWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  space_cv_.notify_all();
  thread_.join();
}

void StoreWriter::enqueue(PreparedWrite write, StoreClock::time_point deadline,
                          WriteCallback done) {
  std::unique_lock<std::mutex> lock(mu_);
  while (pending_bytes_ > 0 && pending_bytes_ + write.bytes > limits_.max_pending_bytes &&
         !stopping_) {
    if (space_cv_.wait_until(lock, deadline) == std::cv_status::timeout && pending_bytes_ > 0 &&
        pending_bytes_ + write.bytes > limits_.max_pending_bytes) {
      lock.unlock();
      done(make_error(ErrorCategory::kUnavailable, "store.backpressure",
                      "the store's write queue stayed full (" + std::to_string(pending_bytes_) +
                          " bytes pending) until the write's deadline"));
      return;
    }
  }
  pending_bytes_ += write.bytes;
  queue_.push_back({std::move(write), deadline, std::move(done)});
  lock.unlock();
  work_cv_.notify_one();
}

WriteStats StoreWriter::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void StoreWriter::run() {
  for (;;) {
    Group group;
    std::unique_lock<std::mutex> lock(mu_);
    while (queue_.empty() && !stopping_) {
      work_cv_.wait_for(lock, std::chrono::milliseconds(100));  // re-checks stopping_
    }
    if (queue_.empty()) return;  // stopping and drained
    const auto window_end = StoreClock::now() + limits_.group_commit;
    for (;;) {
      while (!queue_.empty() && group.bytes < limits_.max_group_bytes) {
        Pending p = std::move(queue_.front());
        queue_.pop_front();
        pending_bytes_ -= p.write.bytes;
        lock.unlock();
        space_cv_.notify_all();
        stage(p, group);
        lock.lock();
      }
      // Full, closing, or as many writes as the last group held (the load is steady: waiting
      // longer would only delay appenders that are all in already).
      const std::size_t writes = group.written.size() + group.refused.size();
      if (group.bytes >= limits_.max_group_bytes || stopping_ || writes >= last_group_writes_) {
        break;
      }
      if (work_cv_.wait_until(lock, window_end) == std::cv_status::timeout) {
        if (queue_.empty()) break;
      }
    }
    last_group_writes_ = std::max<std::size_t>(1, group.written.size() + group.refused.size());
    if (group.batch.Count() > 0) {
      ++stats_.synced_batches;
      stats_.acknowledged_writes += group.written.size();
      stats_.bytes += group.bytes;
    }
    lock.unlock();
    commit(group);
  }
}

void StoreWriter::stage(Pending& p, Group& group) {
  if (StoreClock::now() > p.deadline) {
    group.refused.emplace_back(std::move(p.done),
                               make_error(ErrorCategory::kTimeout, "store.deadline",
                                          "the write's deadline passed before it was written"));
    return;
  }
  std::vector<bool> skip(p.write.records.size(), false);
  std::unordered_map<std::string, std::string> mine;  // unique keys of this write
  for (std::size_t i = 0; i < p.write.records.size(); ++i) {
    const PreparedRecord& r = p.write.records[i];
    if (!r.unique) continue;
    std::string id = std::string(1, static_cast<char>(r.unique_cf)) + r.unique_key;
    std::string existing;
    bool present = false;
    if (auto it = mine.find(id); it != mine.end()) {
      existing = it->second, present = true;
    } else if (auto it2 = group.staged.find(id); it2 != group.staged.end()) {
      existing = it2->second, present = true;
    } else {
      rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), handles_[static_cast<int>(r.unique_cf)],
                                   r.unique_key, &existing);
      if (!s.ok() && !s.IsNotFound()) {
        group.refused.emplace_back(std::move(p.done), rocks::to_error(s, "look up " + r.what));
        return;
      }
      present = s.ok();
    }
    if (present && existing != r.unique_value) {
      group.refused.emplace_back(
          std::move(p.done),
          make_error(ErrorCategory::kInvalidInput, "store.conflict",
                     r.what + " is already stored with different content; ids are write-once"));
      return;
    }
    skip[i] = present;
    mine.emplace(std::move(id), r.unique_value);
  }
  for (std::size_t i = 0; i < p.write.records.size(); ++i) {
    if (skip[i]) continue;
    for (const PreparedEntry& e : p.write.records[i].entries) {
      group.batch.Put(handles_[static_cast<int>(e.cf)], e.key, e.value);
      group.bytes += e.key.size() + e.value.size();
    }
  }
  for (auto& [id, value] : mine) group.staged.emplace(id, std::move(value));
  p.write = PreparedWrite{};  // copied into the batch: free the encoded values now
  group.written.push_back(std::move(p.done));
}

void StoreWriter::commit(Group& group) {
  Status status;
  if (group.batch.Count() > 0) {
    rocksdb::WriteOptions options;
    options.sync = true;  // acknowledged means in the WAL and synced
    rocksdb::Status s = db_->Write(options, &group.batch);
    if (!s.ok()) {
      status = rocks::to_error(
          s, "synced write of " + std::to_string(group.written.size()) + " record group(s)");
    }
  }
  for (WriteCallback& done : group.written) done(status);
  for (auto& [done, error] : group.refused) done(error);
}

}  // namespace cuda_agent
