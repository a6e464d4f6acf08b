#pragma once
// YAML config reading shared by node and worker configs. Every problem is
// collected (not just the first) as "FILE: KEY: what is wrong", and keys the
// program never asked for are errors too, so a typo never silently falls back
// to a default.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/result.h"

namespace baton {

class ConfigErrors {
 public:
  explicit ConfigErrors(std::string file) : file_(std::move(file)) {}
  void add(const std::string& key, const std::string& message);
  bool empty() const { return messages_.empty(); }
  const std::vector<std::string>& messages() const { return messages_; }
  std::string joined() const;  ///< one message per line
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::vector<std::string> messages_;
};

/// One YAML mapping, addressed by its dotted path ("election").
class ConfigMap {
 public:
  ConfigMap(YAML::Node node, std::string path, ConfigErrors& errors);

  std::optional<std::string> string(const std::string& key, bool required = false);
  std::optional<Millis> duration(const std::string& key);
  std::optional<bool> boolean(const std::string& key);
  std::optional<std::int64_t> integer(const std::string& key, std::int64_t min, std::int64_t max);
  std::optional<std::vector<std::string>> string_list(const std::string& key);
  /// A nested mapping; absent gives an empty map.
  ConfigMap map(const std::string& key);
  /// Marks a key the caller reads from the raw YAML (lists, free-form maps).
  void mark_known(const std::string& key) { asked_.insert(key); }
  /// Reports every key present in the file that no getter asked for.
  void reject_unknown_keys();

  std::string key_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

 private:
  std::optional<YAML::Node> lookup(const std::string& key);

  YAML::Node node_;
  std::string path_;
  ConfigErrors& errors_;
  std::set<std::string> asked_;
};

/// A path written in config file `file`: relative paths are relative to the
/// file's directory, as an operator expects. A leading
/// `${CREDENTIALS_DIRECTORY}` is the directory systemd hands a service its
/// credentials in (`LoadCredential=`), so a secret can stay readable by
/// root alone on disk; left as written where the variable is unset (the
/// file then cannot be read, and the error names the path).
std::string resolve_config_path(const std::string& file, const std::string& path);

/// Parses a YAML file whose top level must be a mapping. Errors name the file
/// and, for syntax errors, the line and column.
Result<YAML::Node> load_yaml_file(const std::string& path);

}  // namespace baton
