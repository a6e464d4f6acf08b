#include "baton/base/config_yaml.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "baton/base/duration.h"

namespace baton {

void ConfigErrors::add(const std::string& key, const std::string& message) {
  messages_.push_back(file_ + ": " + key + ": " + message);
}

std::string ConfigErrors::joined() const {
  std::string out;
  for (const auto& m : messages_) out += m + "\n";
  return out;
}

ConfigMap::ConfigMap(YAML::Node node, std::string path, ConfigErrors& errors)
    : node_(std::move(node)), path_(std::move(path)), errors_(errors) {
  if (node_ && !node_.IsNull() && !node_.IsMap()) {
    errors_.add(path_.empty() ? "(top level)" : path_, "must be a mapping of keys to values");
    node_ = YAML::Node(YAML::NodeType::Map);
  }
}

std::optional<YAML::Node> ConfigMap::lookup(const std::string& key) {
  asked_.insert(key);
  if (!node_ || !node_.IsMap()) return std::nullopt;
  YAML::Node v = node_[key];
  if (!v || v.IsNull()) return std::nullopt;
  return v;
}

std::optional<std::string> ConfigMap::string(const std::string& key, bool required) {
  auto v = lookup(key);
  if (!v) {
    if (required) errors_.add(key_path(key), "is required");
    return std::nullopt;
  }
  if (!v->IsScalar()) {
    errors_.add(key_path(key), "must be a string");
    return std::nullopt;
  }
  return v->Scalar();
}

std::optional<Millis> ConfigMap::duration(const std::string& key) {
  auto v = lookup(key);
  if (!v) return std::nullopt;
  if (!v->IsScalar()) {
    errors_.add(key_path(key), "must be a duration like 500ms, 3s or 2m");
    return std::nullopt;
  }
  std::string why;
  auto d = parse_duration(v->Scalar(), &why);
  if (!d) errors_.add(key_path(key), why);
  return d;
}

std::optional<bool> ConfigMap::boolean(const std::string& key) {
  auto v = lookup(key);
  if (!v) return std::nullopt;
  if (v->IsScalar()) {
    const std::string& s = v->Scalar();
    if (s == "true") return true;
    if (s == "false") return false;
  }
  errors_.add(key_path(key), "must be true or false");
  return std::nullopt;
}

std::optional<std::int64_t> ConfigMap::integer(const std::string& key, std::int64_t min, std::int64_t max) {
  auto v = lookup(key);
  if (!v) return std::nullopt;
  try {
    if (v->IsScalar()) {
      std::size_t used = 0;
      const std::string& s = v->Scalar();
      std::int64_t n = std::stoll(s, &used);
      if (used == s.size()) {
        if (n < min || n > max) {
          errors_.add(key_path(key),
                      "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + s);
          return std::nullopt;
        }
        return n;
      }
    }
  } catch (const std::exception&) {
  }
  errors_.add(key_path(key), "must be an integer");
  return std::nullopt;
}

std::optional<std::vector<std::string>> ConfigMap::string_list(const std::string& key) {
  auto v = lookup(key);
  if (!v) return std::nullopt;
  if (!v->IsSequence()) {
    errors_.add(key_path(key), "must be a list of strings");
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (const auto& item : *v) {
    if (!item.IsScalar()) {
      errors_.add(key_path(key), "must be a list of strings");
      return std::nullopt;
    }
    out.push_back(item.Scalar());
  }
  return out;
}

ConfigMap ConfigMap::map(const std::string& key) {
  auto v = lookup(key);
  return ConfigMap(v ? *v : YAML::Node(YAML::NodeType::Map), key_path(key), errors_);
}

void ConfigMap::reject_unknown_keys() {
  if (!node_ || !node_.IsMap()) return;
  for (const auto& kv : node_) {
    std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    if (!asked_.count(key)) errors_.add(key_path(key), "unknown key");
  }
}

std::string resolve_config_path(const std::string& file, const std::string& path) {
  static const std::string credentials = "${CREDENTIALS_DIRECTORY}";
  if (path.rfind(credentials, 0) == 0) {
    const char* dir = std::getenv("CREDENTIALS_DIRECTORY");
    return dir && *dir ? dir + path.substr(credentials.size()) : path;
  }
  std::filesystem::path p(path);
  return p.is_absolute() ? path : (std::filesystem::path(file).parent_path() / p).string();
}

Result<YAML::Node> load_yaml_file(const std::string& path) {
  std::ifstream in(path);
  // YAML::Node converts from anything, so the error side must be named.
  auto error = [](std::string message) {
    return Result<YAML::Node>{boost::system::in_place_error, make_error(Errc::bad_config, std::move(message))};
  };
  if (!in) return error(path + ": cannot open file");
  std::stringstream buf;
  buf << in.rdbuf();
  try {
    YAML::Node root = YAML::Load(buf.str());
    if (!root.IsMap()) return error(path + ": top level must be a mapping of keys to values");
    return root;
  } catch (const YAML::Exception& e) {
    return error(path + ": line " + std::to_string(e.mark.line + 1) + ", column " + std::to_string(e.mark.column + 1) +
                 ": " + e.msg);
  }
}

}  // namespace baton
