// Opening a run store: is the directory a store, which column families to open, its header.
// Creating a store is RocksDB creating the database, then the header written with sync: a crash
// in between leaves an empty database without a header, which the next writer completes.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <regex>

#include "core/clock.h"
#include "core/version.h"
#include "storage/run_store_impl.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using store_keys::Cf;

// What a read-only look at an existing database finds, changing nothing.
struct Probe {
  bool header = false;
  bool empty = true;
};

Expected<Probe> probe_database(const rocksdb::DBOptions& options, const std::string& dir,
                               const std::vector<std::string>& names) {
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const std::string& name : names) families.emplace_back(name, rocksdb::ColumnFamilyOptions());
  rocksdb::DB* raw = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(options, dir, families, &handles, &raw);
  if (!s.ok()) return rocks::to_error(s, "open " + dir + " to look for a store header");
  std::unique_ptr<rocksdb::DB> db(raw);
  Probe probe;
  for (std::size_t i = 0; i < handles.size(); ++i) {
    if (names[i] == rocksdb::kDefaultColumnFamilyName) {
      std::string value;
      probe.header =
          db->Get(rocksdb::ReadOptions(), handles[i], std::string(store_keys::kHeaderKey), &value)
              .ok();
    }
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), handles[i]));
    it->SeekToFirst();
    // An unreadable family is not known to be empty: the directory stays refused.
    if (it->Valid() || !it->status().ok()) probe.empty = false;
  }
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
  return probe;
}

// True when `dir` holds only what RocksDB writes while creating a database, before CURRENT:
// a writer killed at that moment left it, nothing can have been acknowledged, and the next writer
// may finish the creation. Anything else (a foreign file) keeps the directory refused.
bool only_creation_debris(const std::string& dir) {
  static const std::regex kDebris(
      R"((LOCK|IDENTITY|LOG|LOG\.old\.\d+|MANIFEST-\d+|OPTIONS-\d+(\.dbtmp)?|\d+\.dbtmp|\d+\.log))");
  std::error_code ec;
  bool any = false;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file(ec) ||
        !std::regex_match(entry.path().filename().string(), kDebris)) {
      return false;
    }
    any = true;
  }
  return any && !ec;
}

bool database_empty(const DbView& v) {
  for (rocksdb::ColumnFamilyHandle* h : v.handles) {
    if (!h) continue;
    std::unique_ptr<rocksdb::Iterator> it(v.db->NewIterator(rocksdb::ReadOptions(), h));
    it->SeekToFirst();
    if (it->Valid() || !it->status().ok()) return false;
  }
  return true;
}

Status write_header(const RunStore::Impl& impl, const DbView& v) {
  StoreHeader h;
  h.magic = std::string(kStoreMagic);
  h.format_version = kStoreFormatVersion;
  h.created_unix_ms = now_unix_ms();
  h.created_by =
      std::string("cuda-agent ") + build_info::kVersion + " (" + build_info::kGitCommit + ")";
  rocksdb::WriteOptions sync;
  sync.sync = true;
  rocksdb::Status s = v.db->Put(sync, v.cf(Cf::kDefault), std::string(store_keys::kHeaderKey),
                                encode_store_value(h));
  if (!s.ok()) return rocks::to_error(s, impl.options.dir + ": write the store header");
  return Status::ok();
}

}  // namespace

Expected<bool> check_store_directory(const std::string& dir, StoreMode mode) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    if (mode != StoreMode::kWrite) {
      return make_error(ErrorCategory::kNotFound, "store.missing",
                        "no run store at " + dir + ": the directory does not exist");
    }
    if (!fs::create_directories(dir, ec) && ec) {
      return make_error(ErrorCategory::kIo, "store.io",
                        "cannot create the store directory " + dir + ": " + ec.message());
    }
    return true;
  }
  if (!fs::is_directory(dir, ec)) {
    return make_error(ErrorCategory::kInvalidInput, "store.not_a_store",
                      dir + " is not a run store: it is not a directory");
  }
  if (fs::exists(fs::path(dir) / "CURRENT", ec)) return false;
  if (mode == StoreMode::kWrite && (fs::is_empty(dir, ec) || only_creation_debris(dir))) {
    return true;
  }
  return make_error(
      ErrorCategory::kInvalidInput, "store.not_a_store",
      dir + " is not a run store (no RocksDB CURRENT file)" +
          (mode == StoreMode::kWrite ? "; refusing to create one in a non-empty directory" : ""));
}

Expected<std::vector<rocksdb::ColumnFamilyDescriptor>> resolve_families(
    const std::string& dir, StoreMode mode, const rocks::StoreRocksOptions& options, bool create) {
  std::vector<rocksdb::ColumnFamilyDescriptor> families = options.column_families;
  if (create) return families;
  std::vector<std::string> existing;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(options.db, dir, &existing);
  if (!s.ok()) return rocks::to_error(s, dir + ": read the store's column families");
  std::string missing;
  std::vector<std::string> missing_later;  // families a newer build added to an older store
  for (int i = 0; i < static_cast<int>(Cf::kCount); ++i) {
    const std::string name(store_keys::cf_name(Cf(i)));
    if (std::find(existing.begin(), existing.end(), name) != existing.end()) continue;
    if (store_keys::added_later(Cf(i))) {
      missing_later.push_back(name);
    } else {
      missing += " " + name;
    }
  }
  if (mode != StoreMode::kWrite && missing.empty() && !missing_later.empty()) {
    // A store of an older build, read as it is: the later families are left out (their handles
    // are null) and read as empty; the next writer adds them.
    std::erase_if(families, [&](const auto& d) {
      return std::find(missing_later.begin(), missing_later.end(), d.name) != missing_later.end();
    });
  } else {
    for (const std::string& name : missing_later) missing += " " + name;
  }
  if (!missing.empty()) {
    // Another RocksDB database (left untouched), a store whose creation was interrupted (empty:
    // the writer completes it) or a store of an older build (the writer adds the families).
    ASSIGN_OR_RETURN(const Probe probe, probe_database(options.db, dir, existing));
    if (!probe.header && !probe.empty) {
      return make_error(ErrorCategory::kInvalidInput, "store.not_a_store",
                        dir +
                            " is a RocksDB database but not a cuda-agent run store (no "
                            "header); left untouched");
    }
    if (mode != StoreMode::kWrite) {
      return make_error(ErrorCategory::kInvalidInput, "store.not_a_store",
                        dir + " is not a complete run store (missing column families:" + missing +
                            "); opening it for writing completes it");
    }
  }
  for (const std::string& name : existing) {  // a newer build's families: opened, untouched
    const bool ours = std::any_of(families.begin(), families.end(),
                                  [&](const auto& d) { return d.name == name; });
    if (!ours) families.emplace_back(name, rocksdb::ColumnFamilyOptions());
  }
  return families;
}

Status check_store_header(const RunStore::Impl& impl, const DbView& v) {
  const std::string& dir = impl.options.dir;
  const std::string key(store_keys::kHeaderKey);
  std::string value;
  rocksdb::Status s = v.db->Get(rocksdb::ReadOptions(), v.cf(Cf::kDefault), key, &value);
  if (s.IsNotFound()) {
    // A new store, or one whose creation was interrupted before its header was written.
    if (impl.mode == StoreMode::kWrite && database_empty(v)) return write_header(impl, v);
    return make_error(ErrorCategory::kInvalidInput, "store.not_a_store",
                      dir + " is a RocksDB database but not a cuda-agent run store (no header)");
  }
  if (!s.ok()) return impl.rocks_error(v, Cf::kDefault, s, dir + ": read the store header");
  StoreHeader h;
  RETURN_IF_ERROR(impl.decode(Cf::kDefault, key, value, &h));
  if (h.magic != kStoreMagic) {
    return make_error(ErrorCategory::kInvalidInput, "store.not_a_store",
                      dir + " is not a cuda-agent run store (header magic '" + h.magic + "')");
  }
  if (h.format_version > kStoreFormatVersion) {
    return make_error(ErrorCategory::kInvalidInput, "store.newer_version",
                      dir + " was created by a newer version (" + h.created_by + ", store format " +
                          std::to_string(h.format_version) + "); this build reads up to format " +
                          std::to_string(kStoreFormatVersion));
  }
  return Status::ok();
}

std::string wal_and_manifest_files(const std::string& dir) {
  std::map<std::string, std::uintmax_t> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool wal = name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0;
    if (!wal && name != "CURRENT" && name.rfind("MANIFEST-", 0) != 0) continue;
    std::error_code fe;  // a WAL deleted under us is simply not listed
    const std::uintmax_t size = entry.file_size(fe);
    if (!fe) files[name] = size;
  }
  std::string out;
  for (const auto& [name, size] : files) out += name + ":" + std::to_string(size) + ";";
  return out;
}

Expected<std::shared_ptr<DbView>> open_view(const RunStore::Impl& impl, bool create) {
  const std::string& dir = impl.options.dir;
  // kSecondary is a read-only view reopened by catch_up (run_store.cpp says why).
  const StoreMode mode = impl.mode == StoreMode::kSecondary ? StoreMode::kReadOnly : impl.mode;
  rocks::StoreRocksOptions ro = rocks::make_options(impl.options);
  ro.db.create_if_missing = create;
  constexpr int kAttempts = 4;
  for (int attempt = 1;; ++attempt) {
    ASSIGN_OR_RETURN(std::vector<rocksdb::ColumnFamilyDescriptor> families,
                     resolve_families(dir, mode, ro, create));
    const std::string before = wal_and_manifest_files(dir);
    rocksdb::DB* raw = nullptr;
    std::vector<rocksdb::ColumnFamilyHandle*> opened;
    // paranoid_checks (on): every table and blob file the MANIFEST names must exist with its
    // recorded size, so a missing or truncated file fails the open instead of shortening reads.
    rocksdb::Status s = mode == StoreMode::kWrite
                            ? rocksdb::DB::Open(ro.db, dir, families, &opened, &raw)
                            : rocksdb::DB::OpenForReadOnly(ro.db, dir, families, &opened, &raw);
    if (s.ok()) {
      auto v = std::make_shared<DbView>();
      v->db.reset(raw);
      // One slot per Cf, in Cf order, then a newer build's families.
      v->handles.assign(static_cast<std::size_t>(Cf::kCount), nullptr);
      for (rocksdb::ColumnFamilyHandle* h : opened) {
        bool placed = false;
        for (int i = 0; i < static_cast<int>(Cf::kCount) && !placed; ++i) {
          if (h->GetName() == store_keys::cf_name(Cf(i))) {
            v->handles[i] = h;
            placed = true;
          }
        }
        if (!placed) v->handles.push_back(h);
      }
      RETURN_IF_ERROR(check_store_header(impl, *v));
      return v;
    }
    if (rocks::is_lock_error(s)) {
      return make_error(ErrorCategory::kUnavailable, "store.locked",
                        "store locked by another writer: " + dir + " (" + s.ToString() +
                            "); open it read-only or as a secondary to read it while it runs");
    }
    // A live writer deletes files it no longer needs (a flushed WAL, compacted tables) after
    // recording that in the MANIFEST: a reader that read the MANIFEST before may miss them.
    // Reading again sees the new MANIFEST; a file missing while nothing changed is damage.
    if (mode != StoreMode::kWrite && attempt < kAttempts && wal_and_manifest_files(dir) != before) {
      continue;
    }
    Error e = rocks::to_error(s, "open the store " + dir);
    if (e.code == "store.corruption") {
      static const std::regex kMissing(R"((\d+)\.ldb: No such file)");
      const std::string text = s.ToString();
      if (std::smatch m; std::regex_search(text, m, kMissing)) {
        // RocksDB looks for the legacy name last and reports that one.
        e.message += "; missing table file " + (fs::path(dir) / (m[1].str() + ".sst")).string();
      }
      const std::string damaged = damaged_files_in(dir, ro);
      if (!damaged.empty()) e.message += "; damaged: " + damaged;
    }
    return e;
  }
}

}  // namespace cuda_agent
