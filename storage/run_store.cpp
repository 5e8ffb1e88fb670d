// RunStore: open and close, writes, point reads. Open-time checks and creation: store_open.cpp;
// queries: run_store_queries.cpp; export: run_store_export.cpp.
#include "storage/run_store.h"

#include <chrono>
#include <filesystem>
#include <future>

#include "storage/run_store_impl.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using store_keys::Cf;

}  // namespace

DbView::~DbView() {
  if (!db) return;
  for (rocksdb::ColumnFamilyHandle* h : handles) {
    if (h) db->DestroyColumnFamilyHandle(h);
  }
  db->Close().PermitUncheckedError();
}

RunStore::Impl::~Impl() {
  writer.reset();  // writes and acknowledges what is queued
}

std::shared_ptr<DbView> RunStore::Impl::view() const {
  std::lock_guard<std::mutex> lock(mu_);
  return view_;
}

void RunStore::Impl::set_view(std::shared_ptr<DbView> v) {
  std::lock_guard<std::mutex> lock(mu_);
  view_ = std::move(v);
}

std::string RunStore::Impl::where(Cf c, std::string_view key) const {
  return options.dir + ": " + std::string(store_keys::cf_name(c)) + " key '" +
         store_keys::printable(key) + "'";
}

Error RunStore::Impl::rocks_error(const DbView& v, Cf c, const rocksdb::Status& s,
                                  std::string_view context) const {
  Error e = rocks::to_error(s, context);
  if (e.code != "store.corruption") return e;
  // Block checksum errors name their table file; a blob read's error does not.
  const std::string text = s.ToString();
  if (text.find(".sst") == std::string::npos && text.find(".blob") == std::string::npos) {
    const std::string file = locate_damaged_blob_file(v, c);
    e.message += file.empty()
                     ? " (in a blob file of " + std::string(store_keys::cf_name(c)) +
                           "; `cuda-agent store verify " + options.dir + "` checks every file)"
                     : " (in " + file + ")";
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!damage_) damage_ = e;
  return e;
}

Status RunStore::Impl::damage() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (damage_) return *damage_;
  return Status::ok();
}

Cursor::Cursor(const RunStore::Impl& store, Cf cf, std::string lower, std::string upper)
    : store_(store),
      view_(store.view()),
      cf_(cf),
      lower_(std::move(lower)),
      upper_(std::move(upper)) {
  rocksdb::ReadOptions ro;
  if (!upper_.empty()) {
    upper_slice_ = rocksdb::Slice(upper_);
    ro.iterate_upper_bound = &upper_slice_;
  }
  it_.reset(view_->db->NewIterator(ro, view_->cf(cf)));
  it_->Seek(lower_);
}

Status Cursor::status() const {
  rocksdb::Status s = it_->status();
  if (s.ok()) return Status::ok();
  // Where the scan stopped: the last key it returned is gone with the error, so name the range.
  return store_.rocks_error(
      *view_, cf_, s,
      store_.where(cf_, lower_) + " (scan of " + std::string(store_keys::cf_name(cf_)) + ")");
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
  ASSIGN_OR_RETURN(const bool create, check_store_directory(options.dir, mode));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->mode = mode;
  if (mode == StoreMode::kSecondary) impl->seen_files = wal_and_manifest_files(options.dir);
  ASSIGN_OR_RETURN(std::shared_ptr<DbView> view, open_view(*impl, create));
  if (mode == StoreMode::kWrite) {
    WriterLimits limits;
    limits.group_commit = std::chrono::milliseconds(options.group_commit_ms);
    impl->writer = std::make_unique<StoreWriter>(view->db.get(), view->handles, limits);
  }
  impl->set_view(std::move(view));
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
  if (Status damage = impl_->damage(); !damage) {
    Error e = damage.error();
    e.message = dir() + " is damaged; writes are refused (`cuda-agent store verify " + dir() +
                "` names every damaged file). First damage: " + e.message;
    done(std::move(e));
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

// kSecondary reopens the store read-only when its WAL or MANIFEST changed, instead of RocksDB's
// secondary instance: that one does not support blob files (iterating a blob column family
// crashes in RocksDB 7.8), and it tolerates missing files by silently recovering an older
// version, which would turn a damaged store into a shorter answer.
Status RunStore::catch_up() {
  if (impl_->mode != StoreMode::kSecondary) return Status::ok();
  std::lock_guard<std::mutex> lock(impl_->catch_up_mu);
  std::string files = wal_and_manifest_files(dir());
  if (files == impl_->seen_files) return Status::ok();
  ASSIGN_OR_RETURN(std::shared_ptr<DbView> view, open_view(*impl_, /*create=*/false));
  impl_->set_view(std::move(view));
  impl_->seen_files = std::move(files);
  return Status::ok();
}

Status RunStore::compact() {
  if (impl_->mode != StoreMode::kWrite) {
    return make_error(ErrorCategory::kInvalidInput, "store.read_only",
                      dir() + " is open for reading only");
  }
  const std::shared_ptr<DbView> v = impl_->view();
  for (int i = 0; i < static_cast<int>(Cf::kCount); ++i) {
    rocksdb::CompactRangeOptions options;
    options.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    rocksdb::Status s = v->db->CompactRange(options, v->handles[i], nullptr, nullptr);
    if (!s.ok()) {
      return impl_->rocks_error(*v, Cf(i), s,
                                dir() + ": compact " + std::string(store_keys::cf_name(Cf(i))));
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
