// RunStore: open and close, writes, point reads. Open-time checks and creation: store_open.cpp;
// queries: run_store_queries.cpp; export: run_store_export.cpp.
#include "storage/run_store.h"

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <future>

#include "storage/run_store_impl.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using store_keys::Cf;

}  // namespace

RunStore::Impl::~Impl() {
  writer.reset();  // writes and acknowledges what is queued
  if (db) {
    for (rocksdb::ColumnFamilyHandle* h : handles) {
      if (h) db->DestroyColumnFamilyHandle(h);
    }
    db->Close().PermitUncheckedError();
    db.reset();
  }
  if (!secondary_dir.empty()) {
    std::error_code ec;
    fs::remove_all(secondary_dir, ec);
  }
}

std::string RunStore::Impl::where(Cf c, std::string_view key) const {
  return options.dir + ": " + std::string(store_keys::cf_name(c)) + " key '" +
         store_keys::printable(key) + "'";
}

Cursor::Cursor(const RunStore::Impl& store, Cf cf, std::string lower, std::string upper)
    : store_(store), cf_(cf), lower_(std::move(lower)), upper_(std::move(upper)) {
  rocksdb::ReadOptions ro;
  if (!upper_.empty()) {
    upper_slice_ = rocksdb::Slice(upper_);
    ro.iterate_upper_bound = &upper_slice_;
  }
  it_.reset(store.db->NewIterator(ro, store.cf(cf)));
  it_->Seek(lower_);
}

Status Cursor::status() const {
  rocksdb::Status s = it_->status();
  if (s.ok()) return Status::ok();
  return rocks::to_error(s, store_.where(cf_, lower_) + " (scan)");
}

Status scan_summaries(const RunStore::Impl& store, const std::string& prefix,
                      const std::string& start, const SummaryVisitor& visit) {
  Cursor c(store, Cf::kIndexes, start.empty() ? prefix : start, store_keys::prefix_end(prefix));
  for (; c.valid(); c.next()) {
    EpisodeSummary s;
    RETURN_IF_ERROR(store.decode(Cf::kIndexes, c.key(), c.value(), &s));
    if (!visit(s)) return Status::ok();
  }
  return c.status();
}

RunStore::RunStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RunStore::~RunStore() = default;

Expected<std::unique_ptr<RunStore>> RunStore::open(const StoreOptions& options, StoreMode mode) {
  const std::string& dir = options.dir;
  ASSIGN_OR_RETURN(const bool create, check_store_directory(dir, mode));
  rocks::StoreRocksOptions ro = rocks::make_options(options);
  ro.db.create_if_missing = create;
  ASSIGN_OR_RETURN(std::vector<rocksdb::ColumnFamilyDescriptor> families,
                   resolve_families(dir, mode, ro, create));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->mode = mode;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s;
  if (mode == StoreMode::kWrite) {
    s = rocksdb::DB::Open(ro.db, dir, families, &impl->handles, &raw);
  } else if (mode == StoreMode::kReadOnly) {
    s = rocksdb::DB::OpenForReadOnly(ro.db, dir, families, &impl->handles, &raw);
  } else {
    std::string pattern = (fs::temp_directory_path() / "cuda-agent-secondary-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) {
      return make_error(ErrorCategory::kIo, "store.io",
                        "cannot create a temporary directory for a secondary view of " + dir);
    }
    impl->secondary_dir = pattern;
    ro.db.max_open_files = -1;  // required by secondary instances
    s = rocksdb::DB::OpenAsSecondary(ro.db, dir, impl->secondary_dir, families, &impl->handles,
                                     &raw);
  }
  if (!s.ok()) {
    if (rocks::is_lock_error(s)) {
      return make_error(ErrorCategory::kUnavailable, "store.locked",
                        "store locked by another writer: " + dir + " (" + s.ToString() +
                            "); open it read-only or as a secondary to read it while it runs");
    }
    return rocks::to_error(s, "open the store " + dir);
  }
  impl->db.reset(raw);
  // One slot per Cf, in Cf order (null for a later family an older store lacks, read modes),
  // then a newer build's families.
  std::vector<rocksdb::ColumnFamilyHandle*> opened = std::move(impl->handles);
  impl->handles.assign(static_cast<std::size_t>(Cf::kCount), nullptr);
  for (rocksdb::ColumnFamilyHandle* h : opened) {
    bool placed = false;
    for (int i = 0; i < static_cast<int>(Cf::kCount) && !placed; ++i) {
      if (h->GetName() == store_keys::cf_name(Cf(i))) {
        impl->handles[i] = h;
        placed = true;
      }
    }
    if (!placed) impl->handles.push_back(h);
  }
  RETURN_IF_ERROR(check_store_header(*impl));
  if (mode == StoreMode::kWrite) {
    WriterLimits limits;
    limits.group_commit = std::chrono::milliseconds(options.group_commit_ms);
    impl->writer = std::make_unique<StoreWriter>(raw, impl->handles, limits);
  }
  return std::unique_ptr<RunStore>(new RunStore(std::move(impl)));
}

const std::string& RunStore::dir() const { return impl_->options.dir; }
StoreMode RunStore::mode() const { return impl_->mode; }

void RunStore::submit(StoreWrite write, StoreClock::time_point deadline, WriteCallback done) {
  if (impl_->mode != StoreMode::kWrite) {
    done(make_error(ErrorCategory::kInvalidInput, "store.read_only",
                    dir() + " is open for reading only"));
    return;
  }
  Expected<PreparedWrite> prepared = prepare_write(std::move(write));
  if (!prepared) {
    done(prepared.error().with_context(dir()));
    return;
  }
  impl_->writer->enqueue(std::move(prepared).value(), deadline, std::move(done));
}

Status RunStore::write(StoreWrite write, std::chrono::milliseconds timeout) {
  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> acked = promise->get_future();
  submit(std::move(write), StoreClock::now() + timeout,
         [promise](const Status& s) { promise->set_value(s); });
  if (acked.wait_for(timeout) != std::future_status::ready) {
    return make_error(ErrorCategory::kTimeout, "store.ack_timeout",
                      dir() + ": write not acknowledged within " + std::to_string(timeout.count()) +
                          " ms; it may still be written and retrying it is safe");
  }
  return acked.get();
}

WriteStats RunStore::write_stats() const {
  return impl_->writer ? impl_->writer->stats() : WriteStats{};
}

Status RunStore::catch_up() {
  if (impl_->mode != StoreMode::kSecondary) return Status::ok();
  rocksdb::Status s = impl_->db->TryCatchUpWithPrimary();
  if (!s.ok()) return rocks::to_error(s, dir() + ": catch up with the writer");
  return Status::ok();
}

Status RunStore::compact() {
  if (impl_->mode != StoreMode::kWrite) {
    return make_error(ErrorCategory::kInvalidInput, "store.read_only",
                      dir() + " is open for reading only");
  }
  for (int i = 0; i < static_cast<int>(Cf::kCount); ++i) {
    rocksdb::CompactRangeOptions options;
    options.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    rocksdb::Status s = impl_->db->CompactRange(options, impl_->handles[i], nullptr, nullptr);
    if (!s.ok()) {
      return rocks::to_error(s, dir() + ": compact " + std::string(store_keys::cf_name(Cf(i))));
    }
  }
  return Status::ok();
}

Expected<EpisodeRecord> RunStore::get_episode(const RunId& run, const EpisodeId& episode) const {
  return impl_->get<EpisodeRecord>(Cf::kEpisodes, store_keys::episode_key(run, episode),
                                   "episode " + run.value() + "/" + episode.value());
}

Expected<EpisodeSummary> RunStore::get_episode_summary(const RunId& run,
                                                       const EpisodeId& episode) const {
  return impl_->get<EpisodeSummary>(Cf::kIndexes, store_keys::episode_by_id_key(episode, run),
                                    "episode " + run.value() + "/" + episode.value());
}

Expected<std::vector<EpisodeSummary>> RunStore::find_episode(const EpisodeId& episode) const {
  std::vector<EpisodeSummary> out;
  RETURN_IF_ERROR(scan_summaries(*impl_, store_keys::episode_by_id_prefix(episode), "",
                                 [&](const EpisodeSummary& s) {
                                   out.push_back(s);
                                   return true;
                                 }));
  return out;
}

Expected<EvaluationRecord> RunStore::get_evaluation(const EvaluationId& evaluation) const {
  return impl_->get<EvaluationRecord>(Cf::kEvaluations, store_keys::evaluation_key(evaluation),
                                      "evaluation " + evaluation.value());
}

Expected<TaskRecord> RunStore::get_task(const TaskId& task) const {
  return impl_->get<TaskRecord>(Cf::kTasks, store_keys::task_key(task), "task " + task.value());
}

Expected<ArtifactRecord> RunStore::get_artifact(std::string_view hash) const {
  return impl_->get<ArtifactRecord>(Cf::kArtifacts, store_keys::artifact_key(hash),
                                    "artifact " + std::string(hash));
}

Expected<BaselineRecord> RunStore::get_baseline(const TaskId& task, std::string_view device,
                                                std::string_view torch_version,
                                                std::string_view precision) const {
  BaselineRecord key;
  key.task_id = task;
  key.device = device;
  key.torch_version = torch_version;
  key.precision = precision;
  return impl_->get<BaselineRecord>(Cf::kBaselines, store_keys::baseline_key(key),
                                    "baseline of task " + task.value());
}

Expected<RunRecord> RunStore::get_run(const RunId& run) const {
  return impl_->get<RunRecord>(Cf::kRuns, store_keys::run_key(run), "run " + run.value());
}

std::uint64_t directory_bytes(const std::string& dir) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code fe;  // files come and go under compaction: skip what vanished
    if (it->is_regular_file(fe)) {
      const auto size = it->file_size(fe);
      if (!fe) total += size;
    }
  }
  return total;
}

}  // namespace cuda_agent
