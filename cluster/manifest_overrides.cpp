#include "cluster/manifest_overrides.h"

#include <toml++/toml.h>

#include <algorithm>
#include <map>
#include <sstream>

namespace cuda_agent {
namespace {

Error bad_setting(const std::string& setting, const std::string& why) {
  return make_error(ErrorCategory::kInvalidInput, "manifest.bad_setting",
                    "--set " + setting + ": " + why + " (expected SECTION.KEY=VALUE)");
}

Expected<toml::table> parse_toml(std::string_view text, std::string_view what) {
  try {
    return toml::parse(text, what);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << e;
    return make_error(ErrorCategory::kInvalidInput, "manifest.parse", os.str());
  }
}

std::string render_node(const toml::node& node) {
  std::ostringstream os;
  node.visit([&](const auto& v) { os << v; });
  return os.str();
}

// section.key -> value text; arrays of tables ([[nodes]]) as one entry under their name.
std::map<std::string, std::string> flatten(const toml::table& root) {
  std::map<std::string, std::string> out;
  for (const auto& [section, node] : root) {
    const std::string name(section.str());
    if (const toml::table* t = node.as_table()) {
      for (const auto& [key, value] : *t)
        out[name + "." + std::string(key.str())] = render_node(value);
    } else {
      out[name] = render_node(node);
    }
  }
  return out;
}

}  // namespace

Expected<std::string> apply_manifest_settings(std::string_view text,
                                              const std::vector<std::string>& settings) {
  ASSIGN_OR_RETURN(toml::table root, parse_toml(text, "manifest"));
  for (const std::string& s : settings) {
    const std::size_t eq = s.find('=');
    if (eq == std::string::npos) return bad_setting(s, "no '='");
    const std::string path = s.substr(0, eq);
    const std::string value = s.substr(eq + 1);
    const std::size_t dot = path.find('.');
    if (dot == std::string::npos) return bad_setting(s, "no '.' between section and key");
    const std::string section = path.substr(0, dot);
    const std::string key = path.substr(dot + 1);
    if (section.empty() || key.empty() || key.find('.') != std::string::npos)
      return bad_setting(s, "the name must be SECTION.KEY");
    if (section == "nodes") return bad_setting(s, "nodes cannot be set here; edit the manifest");
    toml::node* existing = root.get(section);
    if (existing == nullptr) {
      root.insert(section, toml::table{});
      existing = root.get(section);
    }
    toml::table* table = existing->as_table();
    if (table == nullptr) return bad_setting(s, "'" + section + "' is not a section");
    toml::table parsed;
    bool is_value = true;
    try {
      parsed = toml::parse("v = " + value);
    } catch (const toml::parse_error&) {
      is_value = false;
    }
    if (is_value && parsed.get("v") != nullptr) {
      table->insert_or_assign(key, *parsed.get("v"));
    } else {
      table->insert_or_assign(key, value);
    }
  }
  std::ostringstream os;
  os << root;
  return os.str();
}

Expected<std::vector<std::string>> changed_manifest_keys(std::string_view before,
                                                         std::string_view after) {
  ASSIGN_OR_RETURN(toml::table a, parse_toml(before, "stored manifest"));
  ASSIGN_OR_RETURN(toml::table b, parse_toml(after, "manifest"));
  const auto fa = flatten(a);
  const auto fb = flatten(b);
  std::vector<std::string> changed;
  for (const auto& [k, v] : fa) {
    auto it = fb.find(k);
    if (it == fb.end() || it->second != v) changed.push_back(k);
  }
  for (const auto& [k, v] : fb) {
    if (!fa.count(k)) changed.push_back(k);
  }
  std::sort(changed.begin(), changed.end());
  return changed;
}

}  // namespace cuda_agent
