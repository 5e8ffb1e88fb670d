// [[nodes]]: reading each table, then the rules between roles, GPUs and nodes.
#include <algorithm>
#include <map>

#include "cluster/manifest_internal.h"

namespace cuda_agent {

bool NodeSpec::has_role(std::string_view role) const {
  return std::find(roles.begin(), roles.end(), role) != roles.end();
}

namespace manifest_detail {
namespace {

struct GpuRole {
  std::string_view role;
  std::string_view key;
  const std::vector<std::int64_t>* gpus;
};

std::string line_ref(Where where) { return "line " + std::to_string(where.line); }

bool may_share(const RunOptions& run, std::string_view a, std::string_view b) {
  if (a == "bench" || b == "bench") return run.allow_shared_bench_gpu;
  return run.colocate_learner_rollout;  // learner and rollout
}

std::string sharing_hint(std::string_view a, std::string_view b) {
  if (a == "bench" || b == "bench") {
    return "; a bench GPU must be dedicated (timings on a shared GPU are noise). Only a one-GPU "
           "machine should set [run] allow_shared_bench_gpu = true";
  }
  return "; set [run] colocate_learner_rollout = true to let them time-share it";
}

void check_roles(const NodeSpec& node, const TableReader& reader, Diagnostics& diag) {
  bool host_ok = !node.host.empty() && std::none_of(node.host.begin(), node.host.end(), [](char c) {
    return static_cast<unsigned char>(c) <= ' ' || c == 0x7f || c == '\'' || c == '"';
  });
  if (!host_ok) {
    diag.add("manifest.invalid_value", reader.key_where("host"), reader.context("host"),
             manifest_detail::toml_value(node.host) +
                 " is not a host name: it must be non-empty, without spaces or quotes");
  }
  if (node.roles.empty()) {
    diag.add("manifest.invalid_value", reader.key_where("roles"), reader.context("roles"),
             "must name at least one role");
  }
  for (std::size_t i = 0; i < node.roles.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (node.roles[i] != node.roles[j]) continue;
      diag.add("manifest.duplicate_role", reader.element_where("roles", i), reader.context("roles"),
               "role '" + node.roles[i] + "' is listed twice");
    }
  }
}

// Index range, duplicates, and the list against the roles. Returns whether the list may take part
// in the sharing check.
bool check_gpu_list(const NodeSpec& node, const TableReader& reader, const GpuRole& list,
                    Diagnostics& diag) {
  bool has_role = node.has_role(list.role);
  if (reader.has(list.key) && !has_role) {
    diag.add("manifest.role_mismatch", reader.key_where(list.key), reader.context(list.key),
             "given, but '" + std::string(list.role) + "' is not in this node's roles (" +
                 line_ref(reader.key_where("roles")) + ")");
    return false;
  }
  // A node without GPUs runs its learner and rollout roles on the CPU (one process each: the
  // tiny-model runs of a machine without a GPU); the bench always needs a GPU.
  const bool on_cpu = node.gpus == 0 && list.role != "bench";
  if (has_role && list.gpus->empty() && !on_cpu) {
    std::string_view at = reader.has(list.key) ? list.key : std::string_view("roles");
    diag.add(
        "manifest.missing_gpus", reader.key_where(at), reader.context(list.key),
        "role '" + std::string(list.role) + "' needs at least one GPU in " + std::string(list.key));
    return false;
  }
  bool ok = true;
  for (std::size_t i = 0; i < list.gpus->size(); ++i) {
    std::int64_t gpu = (*list.gpus)[i];
    Where where = reader.element_where(list.key, i);
    if (gpu < 0 || gpu >= node.gpus) {
      std::string valid =
          node.gpus > 0 ? " (indices 0 to " + std::to_string(node.gpus - 1) + ")" : std::string();
      diag.add("manifest.gpu_out_of_range", where, reader.context(list.key),
               "GPU " + std::to_string(gpu) +
                   " does not exist: the node has gpus = " + std::to_string(node.gpus) + valid);
      ok = false;
    }
    for (std::size_t j = 0; j < i; ++j) {
      if ((*list.gpus)[j] != gpu) continue;
      diag.add("manifest.duplicate_gpu", where, reader.context(list.key),
               "GPU " + std::to_string(gpu) + " is listed twice");
      ok = false;
      break;
    }
  }
  return ok;
}

void check_node(const RunOptions& run, const TableReader& reader, NodeSpec& node,
                Diagnostics& diag) {
  check_roles(node, reader, diag);
  const GpuRole lists[] = {{"learner", "learner_gpus", &node.learner_gpus},
                           {"rollout", "rollout_gpus", &node.rollout_gpus},
                           {"bench", "bench_gpus", &node.bench_gpus}};
  struct Owner {
    std::string_view role;
    Where where;
  };
  std::map<std::int64_t, Owner> owners;
  for (const GpuRole& list : lists) {
    if (!check_gpu_list(node, reader, list, diag)) continue;
    for (std::size_t i = 0; i < list.gpus->size(); ++i) {
      std::int64_t gpu = (*list.gpus)[i];
      Where where = reader.element_where(list.key, i);
      auto [it, inserted] = owners.emplace(gpu, Owner{list.role, where});
      if (inserted || may_share(run, it->second.role, list.role)) continue;
      diag.add("manifest.gpu_conflict", where, reader.context(list.key),
               "GPU " + std::to_string(gpu) + " is also given to role '" +
                   std::string(it->second.role) + "' (" + line_ref(it->second.where) + ")" +
                   sharing_hint(it->second.role, list.role));
    }
  }
  if (reader.has("compile_workers") && !node.has_role("compile")) {
    diag.add("manifest.role_mismatch", reader.key_where("compile_workers"),
             reader.context("compile_workers"),
             "given, but 'compile' is not in this node's roles (" +
                 line_ref(reader.key_where("roles")) + ")");
  }
  if (!reader.has("compile_workers")) node.compile_workers = node.has_role("compile") ? 1 : 0;
}

}  // namespace

std::vector<NodeSource> read_nodes(const toml::table& root, Diagnostics& diag,
                                   std::vector<NodeSpec>& nodes) {
  std::vector<NodeSource> sources;
  auto it = root.find("nodes");
  if (it == root.end()) return sources;
  const toml::array* array = it->second.as_array();
  if (array == nullptr) {
    diag.add("manifest.wrong_type", where_of(it->first.source()), "'nodes'",
             "expected an array of tables, got " + std::string(type_name(it->second)) +
                 "; write each node as a [[nodes]] table");
    return sources;
  }
  int index = 0;
  for (const toml::node& element : *array) {
    std::string context = "[[nodes]] #" + std::to_string(++index);
    if (!element.is_table()) {
      diag.add("manifest.wrong_type", where_of(element.source()), context,
               "expected a table, got " + std::string(type_name(element)));
      continue;
    }
    TableReader reader(element.as_table(), context, &diag);
    NodeSpec node;
    node.visit(reader);
    reader.report_unknown_keys();
    node.source_line = reader.table_where().line;
    for (std::string_view key : {"host", "roles"}) {
      if (reader.has(key)) continue;
      diag.add("manifest.missing_key", reader.table_where(), reader.context(key),
               "missing; every node needs 'host' and 'roles'");
    }
    nodes.push_back(std::move(node));
    sources.push_back({std::move(reader)});
  }
  return sources;
}

void check_nodes(const RunOptions& run, const std::vector<NodeSource>& sources,
                 std::vector<NodeSpec>& nodes, Diagnostics& diag) {
  if (nodes.empty()) {
    diag.add("manifest.no_nodes", {}, "[[nodes]]",
             "no nodes: a manifest needs at least one [[nodes]] table, and exactly one node with "
             "the role 'coordinator'");
    return;
  }
  std::map<std::string, std::size_t> hosts;
  std::vector<std::size_t> coordinators;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const TableReader& reader = sources[i].reader;
    check_node(run, reader, nodes[i], diag);
    auto [it, inserted] = hosts.emplace(nodes[i].host, i);
    if (!inserted && !nodes[i].host.empty()) {
      const TableReader& first = sources[it->second].reader;
      diag.add("manifest.duplicate_host", reader.key_where("host"), reader.context("host"),
               "host \"" + nodes[i].host + "\" is also node #" + std::to_string(it->second + 1) +
                   " (" + line_ref(first.key_where("host")) + "); each host may appear once");
    }
    if (nodes[i].has_role("coordinator")) coordinators.push_back(i);
  }
  if (coordinators.empty()) {
    diag.add("manifest.no_coordinator", sources[0].reader.table_where(),
             sources[0].reader.context("roles"),
             "no node has the role 'coordinator'; exactly one must");
  }
  for (std::size_t k = 1; k < coordinators.size(); ++k) {
    const TableReader& reader = sources[coordinators[k]].reader;
    diag.add("manifest.duplicate_coordinator", reader.key_where("roles"), reader.context("roles"),
             "node #" + std::to_string(coordinators[0] + 1) + " (" +
                 line_ref(sources[coordinators[0]].reader.key_where("roles")) +
                 ") has the role 'coordinator' too; exactly one node may");
  }
}

}  // namespace manifest_detail
}  // namespace cuda_agent
