// Damage in a run store: `verify_store` (every checksum RocksDB keeps, file by file) and the
// helpers that name the damaged file when a read or an open meets corruption. All checks are
// RocksDB's own: block checksums of table files (VerifySstFileChecksum), the whole-file CRC32C
// recorded in the MANIFEST when a file was written (its FileChecksumGenerator), and each blob's
// CRC, checked when the blob is read.
#include <rocksdb/convenience.h>
#include <rocksdb/file_checksum.h>
#include <rocksdb/metadata.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "storage/run_store_impl.h"

namespace cuda_agent {
namespace {

namespace fs = std::filesystem;
using store_keys::Cf;

std::string hex(std::string_view bytes) {
  std::string out;
  char buf[3];
  for (unsigned char c : bytes) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

Error corruption(std::string message) {
  return make_error(ErrorCategory::kIo, "store.corruption", std::move(message));
}

// The block checksums of one table file (data, index, filter and meta blocks and the footer).
Status check_table_file(const rocks::StoreRocksOptions& ro, const std::string& path) {
  const rocksdb::Options options(ro.db, ro.column_families.front().options);
  rocksdb::ReadOptions read;
  read.verify_checksums = true;
  read.fill_cache = false;
  rocksdb::Status s = rocksdb::VerifySstFileChecksum(options, rocksdb::EnvOptions(), read, path);
  if (!s.ok()) return rocks::to_error(s, path);
  return Status::ok();
}

// A file's whole-file checksum as the MANIFEST recorded it: function name and value.
struct Recorded {
  std::string method;
  std::string value;
  bool present() const {
    return !value.empty() && !method.empty() && method != rocksdb::kUnknownFileChecksumFuncName;
  }
};

// Recomputes the file's checksum with RocksDB's generator of the recorded function.
Status check_whole_file(const std::string& path, const Recorded& recorded) {
  rocksdb::FileChecksumGenContext context;
  context.file_name = path;
  context.requested_checksum_func_name = recorded.method;
  std::unique_ptr<rocksdb::FileChecksumGenerator> gen =
      rocksdb::GetFileChecksumGenCrc32cFactory()->CreateFileChecksumGenerator(context);
  if (!gen || recorded.method != gen->Name()) {
    return make_error(ErrorCategory::kInvalidInput, "store.invalid",
                      path + ": whole-file checksum of an unknown kind '" + recorded.method + "'");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCategory::kIo, "store.io", path + ": cannot read the file");
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) gen->Update(buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) return make_error(ErrorCategory::kIo, "store.io", path + ": read failed");
  gen->Finalize();
  const std::string actual = gen->GetChecksum();
  if (actual == recorded.value) return Status::ok();
  return corruption(path + ": file checksum mismatch (" + recorded.method + " recorded " +
                    hex(recorded.value) + ", now " + hex(actual) +
                    "): the file changed after RocksDB wrote it");
}

std::string crc32c_name() {
  static const std::string name =
      rocksdb::GetFileChecksumGenCrc32cFactory()
          ->CreateFileChecksumGenerator(rocksdb::FileChecksumGenContext())
          ->Name();
  return name;
}

// Blob files' checksum fields; RocksDB 7.8's BlobMetaData constructor stores the value and the
// function name in each other's member, so take the one that names a function as the method.
Recorded recorded_of(const rocksdb::BlobMetaData& b) {
  if (b.checksum_value == rocksdb::kUnknownFileChecksumFuncName ||
      b.checksum_value == crc32c_name()) {
    return {b.checksum_value, b.checksum_method};
  }
  return {b.checksum_method, b.checksum_value};
}

std::string join(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / fs::path(name).relative_path()).string();
}

// Names the blob files without a recorded checksum (older builds) one of which must hold the bad
// blob: one file is named outright.
std::string unrecorded_blob_files_text(const std::string& list) {
  if (list.empty() || list.find(", ") == std::string::npos) return list;
  return "one of " + list + " (written without a whole-file checksum)";
}

}  // namespace

bool VerifyReport::clean() const {
  return errors.empty() && std::all_of(files.begin(), files.end(), [](const FileCheck& f) {
           return static_cast<bool>(f.result);
         });
}

std::string locate_damaged_blob_file(const DbView& v, Cf cf) {
  rocksdb::ColumnFamilyHandle* h = v.cf(cf);
  if (!h) return "";
  rocksdb::ColumnFamilyMetaData md;
  v.db->GetColumnFamilyMetaData(h, &md);
  std::string unrecorded;
  for (const rocksdb::BlobMetaData& b : md.blob_files) {
    const Recorded recorded = recorded_of(b);
    const std::string path = join(b.blob_file_path, b.blob_file_name);
    if (!recorded.present()) {
      unrecorded += (unrecorded.empty() ? "" : ", ") + path;
    } else if (!check_whole_file(path, recorded)) {
      return path;
    }
  }
  return unrecorded_blob_files_text(unrecorded);
}

std::string damaged_files_in(const std::string& dir, const rocks::StoreRocksOptions& options) {
  std::vector<std::string> tables;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".sst") tables.push_back(entry.path().string());
  }
  std::sort(tables.begin(), tables.end());
  std::string out;
  for (const std::string& path : tables) {
    Status s = check_table_file(options, path);
    if (!s) out += (out.empty() ? "" : "; ") + s.error().message;
  }
  return out;
}

Expected<VerifyReport> verify_store(const StoreOptions& options) {
  const std::string& dir = options.dir;
  if (auto is_store = check_store_directory(dir, StoreMode::kReadOnly); !is_store) {
    return is_store.error();
  }
  VerifyReport report;
  report.dir = dir;
  RunStore::Impl impl;
  impl.options = options;
  impl.mode = StoreMode::kReadOnly;
  const rocks::StoreRocksOptions ro = rocks::make_options(options);
  Expected<std::shared_ptr<DbView>> opened = open_view(impl, /*create=*/false);
  if (!opened) {
    const std::string& code = opened.error().code;
    if (code != "store.corruption" && code != "store.io") return opened.error();
    // Without the MANIFEST's file list: every table file in the directory, block by block.
    report.errors.push_back(opened.error());
    std::vector<std::string> tables;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().extension() == ".sst") tables.push_back(entry.path().string());
    }
    std::sort(tables.begin(), tables.end());
    for (const std::string& path : tables) {
      FileCheck f{.path = path, .kind = "table"};
      std::error_code fe;
      f.bytes = fs::file_size(path, fe);
      f.result = check_table_file(ro, path);
      report.files.push_back(std::move(f));
    }
    return report;
  }
  const DbView& v = **opened;
  for (rocksdb::ColumnFamilyHandle* h : v.handles) {
    if (!h) continue;
    rocksdb::ColumnFamilyMetaData md;
    v.db->GetColumnFamilyMetaData(h, &md);
    for (const rocksdb::LevelMetaData& level : md.levels) {
      for (const rocksdb::SstFileMetaData& t : level.files) {
        FileCheck f{.path = join(t.directory, t.relative_filename),
                    .kind = "table",
                    .column_family = md.name,
                    .bytes = t.size};
        f.result = check_table_file(ro, f.path);
        const Recorded recorded{t.file_checksum_func_name, t.file_checksum};
        if (f.result && recorded.present()) {
          f.whole_file_checksum = true;
          f.result = check_whole_file(f.path, recorded);
        }
        report.files.push_back(std::move(f));
      }
    }
    std::string unrecorded;
    std::vector<std::size_t> unrecorded_at;  // their places in report.files
    for (const rocksdb::BlobMetaData& b : md.blob_files) {
      FileCheck f{.path = join(b.blob_file_path, b.blob_file_name),
                  .kind = "blob",
                  .column_family = md.name,
                  .bytes = b.blob_file_size};
      const Recorded recorded = recorded_of(b);
      if (recorded.present()) {
        f.whole_file_checksum = true;
        f.result = check_whole_file(f.path, recorded);
      } else {
        unrecorded += (unrecorded.empty() ? "" : ", ") + f.path;
        unrecorded_at.push_back(report.files.size());
      }
      report.files.push_back(std::move(f));
    }
    if (unrecorded.empty()) continue;
    // Blob files written before whole-file checksums were recorded: read every value, which
    // checks each blob's own CRC.
    rocksdb::ReadOptions read;
    read.verify_checksums = true;
    read.fill_cache = false;
    std::unique_ptr<rocksdb::Iterator> it(v.db->NewIterator(read, h));
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++report.values_read;
    if (!it->status().ok()) {
      Error e = rocks::to_error(it->status(), dir + ": reading every value of " + md.name);
      e.message += " (in " + unrecorded_blob_files_text(unrecorded) + ")";
      if (unrecorded_at.size() == 1) {
        report.files[unrecorded_at.front()].result = std::move(e);  // the one it can be
      } else {
        report.errors.push_back(std::move(e));
      }
    }
  }
  return report;
}

}  // namespace cuda_agent
