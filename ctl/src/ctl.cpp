// `baton ctl`: one invocation, from its words to the verb's exit code: the
// global flags, the configuration file, the verb's own flags and arguments.
// The verbs are in verb_table.cpp and its families (verbs_*.cpp); `apply` is in apply.cpp.
#include "baton/ctl/ctl.h"

#include <yaml-cpp/yaml.h>

#include <sys/stat.h>
#include <unistd.h>
#include <boost/json.hpp>
#include <boost/url/url.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "baton/ctl/api_client.h"
#include "ctl_verbs.h"
#include "render.h"

namespace baton::ctl {

namespace json = boost::json;

/// Whether HOST:PORT names this host (127.0.0.0/8, ::1, localhost).
static bool loopback_address(const std::string& addr) {
  std::string host = addr.substr(0, addr.rfind(':'));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

namespace {

/// ~/.config/baton/ctl.yaml and friends: addr, token, token_file, output,
/// ca_file, insecure; at the top, and in named contexts (`contexts:`, one
/// chosen by --context, BATON_CONTEXT or `current_context:`), whose keys
/// win over the top's. The credential (token or token_file, one setting)
/// is a context's own: a chosen context never sends the top level's to its
/// address (security review N-L4).
struct FileConfig {
  std::optional<std::string> addr, token, token_file, output, ca_file;
  std::optional<bool> insecure;
};

/// Reads the keys of one level into `fc`; an unknown key is an error.
std::optional<std::string> read_keys(const YAML::Node& y, FileConfig& fc, const std::string& where, bool top_level) {
  for (const auto& kv : y) {
    const auto key = kv.first.as<std::string>();
    if (key == "addr")
      fc.addr = kv.second.as<std::string>();
    else if (key == "token")
      fc.token = kv.second.as<std::string>();
    else if (key == "token_file")
      fc.token_file = kv.second.as<std::string>();
    else if (key == "output")
      fc.output = kv.second.as<std::string>();
    else if (key == "ca_file")
      fc.ca_file = kv.second.as<std::string>();
    else if (key == "insecure")
      fc.insecure = kv.second.as<bool>();
    else if (!(top_level && (key == "contexts" || key == "current_context")))
      return where + ": unknown key '" + key + "' (known: addr, token, token_file, output, ca_file, insecure" +
             (top_level ? ", contexts, current_context)" : ")");
  }
  if (fc.token && fc.token_file) return where + ": token and token_file are one setting: give one of them";
  return std::nullopt;
}

std::optional<std::string> read_file_trimmed(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

int Call::fail(const ApiReply& r) {
  if (r.status == 0 || r.status == 307 || r.status == 308) {
    if (!r.error.empty()) return error(exit_unavailable, r.error);
  }
  std::string code = "http_" + std::to_string(r.status), message = r.body;
  boost::system::error_code ec;
  auto v = json::parse(r.body, ec);
  if (!ec && v.is_object()) {
    if (auto* c = v.as_object().if_contains("code"); c && c->is_string()) code = std::string(c->as_string());
    if (auto* m = v.as_object().if_contains("message"); m && m->is_string()) message = std::string(m->as_string());
  }
  if (json_output()) out << r.body << '\n';
  const int rc = r.status == 404                      ? exit_not_found
                 : r.status == 409                    ? exit_conflict
                 : r.status == 401 || r.status == 403 ? exit_auth
                 : r.status >= 500 || r.status == 307 ? exit_unavailable
                                                      : exit_refused;
  return error(rc, code + ": " + message);
}

int Call::error(int code, const std::string& message) {
  err << "baton ctl: " << message << '\n';
  return code;
}

int Call::usage(const std::string& message) {
  err << "baton ctl " << verb << ": " << message << " (see --help)\n";
  return exit_usage;
}

int run_ctl(const std::vector<std::string>& raw, const Env& env, std::ostream& out, std::ostream& err) {
  const auto all = verbs();
  // Global flags may come anywhere.
  std::map<std::string, std::string> global;
  std::vector<std::string> rest;
  static const std::set<std::string> globals{"--addr",   "--token",   "--token-file", "--config",
                                             "--output", "--timeout", "--ca",         "--context"};
  bool insecure_flag = false, no_headers = false;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    std::string a = raw[i], value;
    if (a == "-o") a = "--output";
    if (a == "-f") a = "--follow-or-file";
    auto eq = a.find('=');
    std::string name = a.rfind("--", 0) == 0 && eq != std::string::npos ? a.substr(0, eq) : a;
    if (name == "--insecure") {
      insecure_flag = true;
    } else if (name == "--no-headers") {
      no_headers = true;
    } else if (globals.count(name)) {
      if (eq != std::string::npos)
        value = a.substr(eq + 1);
      else if (i + 1 < raw.size())
        value = raw[++i];
      else
        return err << "baton ctl: " << name << " needs a value\n", exit_usage;
      global[name] = value;
    } else {
      rest.push_back(a);
    }
  }
  // The verb: the longest run of leading words that names one.
  const Verb* verb = nullptr;
  std::size_t used = 0;
  for (const auto& v : all) {
    if (v.words.size() > rest.size() || v.words.size() <= used) continue;
    if (std::equal(v.words.begin(), v.words.end(), rest.begin())) verb = &v, used = v.words.size();
  }
  const bool help = std::find(rest.begin(), rest.end(), "--help") != rest.end() ||
                    std::find(rest.begin(), rest.end(), "-h") != rest.end();
  if (!verb) {
    if (rest.empty() || rest[0] == "help" || help) return print_help(out, all);
    // Named with what was meant, in a few lines (issue 63: `runs logs`
    // answered "unknown verb 'runs'" and the 60 lines of every verb).
    std::string subs;
    for (const auto& v : all)
      if (v.words.size() > 1 && v.words[0] == rest[0]) subs += (subs.empty() ? "" : ", ") + v.words[1];
    if (subs.empty()) {
      err << "baton ctl: unknown verb '" << rest[0] << "' (baton ctl --help lists every verb)\n";
      return exit_usage;
    }
    err << "baton ctl: unknown verb '" << rest[0] << (rest.size() > 1 ? " " + rest[1] : std::string())
        << "': " << rest[0] << " takes " << subs << " (baton ctl " << rest[0] << " VERB --help)\n";
    for (const auto& v : all)
      if (rest.size() > 1 && v.words.size() == 1 && v.words[0] == rest[1])
        err << "did you mean 'baton ctl " << rest[1] << "'?\n";
    return exit_usage;
  }
  const std::string name = joined(verb->words);
  if (help) {
    out << "usage: baton ctl " << name << (verb->args.empty() ? "" : " " + verb->args) << " [flags]\n\n"
        << verb->help << "\n";
    if (!verb->flags.empty()) out << "\nflags:\n";
    for (const auto& f : verb->flags)
      out << "  " << f.name << (f.value ? " VALUE" : "")
          << std::string(f.name.size() < 20 ? 20 - f.name.size() : 1, ' ') << f.help << '\n';
    out << "\nglobal: --addr HOST:PORT[,HOST:PORT] (BATON_ADDR), --token T (BATON_TOKEN), --token-file F "
           "(BATON_TOKEN_FILE),\n"
           "        --ca FILE (BATON_CA_FILE), --insecure (BATON_INSECURE=1), --config FILE (BATON_CONFIG),\n"
           "        --context NAME (BATON_CONTEXT), -o table|wide|json|jsonl|yaml, --no-headers, --timeout 10s\n";
    return exit_ok;
  }
  Call call(ApiClient("", ""), out, err);
  call.verb = name;
  call.terminal = &out == &std::cout && ::isatty(STDOUT_FILENO) == 1;
  for (std::size_t i = used; i < rest.size(); ++i) {
    std::string a = rest[i];
    if (a == "--follow-or-file") a = name == "apply" ? "--file" : "--follow";
    if (a.rfind("--", 0) != 0) {
      call.args.push_back(a);
      continue;
    }
    auto eq = a.find('=');
    const std::string fname = a.substr(0, eq);
    auto f = std::find_if(verb->flags.begin(), verb->flags.end(), [&](const Flag& x) { return x.name == fname; });
    if (f == verb->flags.end()) return call.usage("unknown flag " + fname);
    if (!f->value) {
      call.flags[fname] = "true";
    } else if (eq != std::string::npos) {
      call.flags[fname] = a.substr(eq + 1);
    } else if (i + 1 < rest.size()) {
      const std::string v = rest[++i];
      // Repeatable: --file a --file b.
      call.flags[fname] = call.flags.count(fname) ? call.flags[fname] + "\n" + v : v;
    } else {
      return call.usage(fname + " needs a value");
    }
  }
  if (static_cast<int>(call.args.size()) < verb->min_args ||
      (verb->max_args >= 0 && static_cast<int>(call.args.size()) > verb->max_args))
    return call.usage("takes " + (verb->args.empty() ? std::string("no arguments") : verb->args));

  // Where and who: flags, then the environment, then the config file.
  FileConfig fc;
  bool top_credential_withheld = false;
  std::string config_path = global.count("--config") ? global["--config"] : env("BATON_CONFIG").value_or("");
  const bool config_named = !config_path.empty();
  if (!config_named)
    if (auto home = env("HOME")) config_path = *home + "/.config/baton/ctl.yaml";
  call.config_path = config_path;
  std::optional<std::string> context =
      global.count("--context") ? std::optional(global["--context"]) : env("BATON_CONTEXT");
  if (!config_path.empty()) {
    try {
      std::ifstream probe(config_path);
      if (probe) {
        YAML::Node y = YAML::LoadFile(config_path);
        if (!y.IsMap() && !y.IsNull()) return call.error(exit_usage, config_path + ": must be a mapping of keys");
        // A file that holds a token is a credential (security review L10).
        struct stat st {};
        if (::stat(config_path.c_str(), &st) == 0 && (st.st_mode & 077) != 0 &&
            read_file_trimmed(config_path).value_or("").find("token:") != std::string::npos)
          call.err << "warning: " << config_path << " holds a token and is readable by others (mode " << std::oct
                   << (st.st_mode & 0777) << std::dec << "): chmod 600 " << config_path << "\n";
        if (y.IsMap()) {
          if (auto bad = read_keys(y, fc, config_path, true)) return call.error(exit_usage, *bad);
          if (!context && y["current_context"]) context = y["current_context"].as<std::string>();
          const YAML::Node contexts = y["contexts"];
          if (contexts && !contexts.IsMap())
            return call.error(exit_usage, config_path + ": contexts: must be a mapping of names to settings");
          for (const auto& kv : contexts) call.contexts.push_back(kv.first.as<std::string>());
          // A `config` verb must work with a current context that is gone
          // (to choose another).
          if (context && name.rfind("config ", 0) != 0) {
            if (!contexts || !contexts[*context]) {
              std::string known;
              for (const auto& n : call.contexts) known += (known.empty() ? "" : ", ") + n;
              return call.error(exit_usage, config_path + ": no context '" + *context +
                                                "' (contexts: " + (known.empty() ? "none" : known) + ")");
            }
            FileConfig own;
            if (auto bad = read_keys(contexts[*context], own, config_path + ": contexts." + *context, false))
              return call.error(exit_usage, *bad);
            if (own.addr) fc.addr = own.addr;
            if (own.output) fc.output = own.output;
            if (own.ca_file) fc.ca_file = own.ca_file;
            if (own.insecure) fc.insecure = own.insecure;
            // Not the top level's credential: that one is for the top
            // level's address (a prod token sent to staging otherwise).
            top_credential_withheld = (fc.token || fc.token_file) && !own.token && !own.token_file;
            fc.token = own.token;
            fc.token_file = own.token_file;
          }
        }
      } else if (config_named) {
        return call.error(exit_usage, "cannot read config file " + config_path);
      }
    } catch (const YAML::Exception& e) {
      return call.error(exit_usage, config_path + ": " + e.what());
    }
  } else if (context) {
    return call.error(exit_usage, "--context " + *context + ": no config file (HOME is not set; give --config FILE)");
  }
  call.context = context.value_or("");
  std::string addr = global.count("--addr") ? global["--addr"]
                     : env("BATON_ADDR")    ? *env("BATON_ADDR")
                                            : fc.addr.value_or(default_addr);
  std::optional<std::string> token = global.count("--token") ? std::optional(global["--token"]) : env("BATON_TOKEN");
  std::optional<std::string> token_file =
      global.count("--token-file") ? std::optional(global["--token-file"]) : env("BATON_TOKEN_FILE");
  if (!token && !token_file) {
    token = fc.token, token_file = fc.token_file;
    if (top_credential_withheld)
      call.err << "note: context '" << *context << "' names no token or token_file; the top level's is not sent "
               << "to another address\n";
  }
  if (!token && token_file) {
    token = read_file_trimmed(*token_file);
    if (!token) return call.error(exit_usage, "cannot read token file " + *token_file);
  }
  call.output = global.count("--output") ? global["--output"] : fc.output.value_or("table");
  static const std::set<std::string> formats{"table", "wide", "json", "jsonl", "yaml"};
  if (!formats.count(call.output)) return call.usage("-o must be table, wide, json, jsonl or yaml");
  set_table_style(!no_headers, call.output == "wide");
  auto timeout = parse_duration(global.count("--timeout") ? global["--timeout"] : "10s");
  if (!timeout) return call.usage("--timeout must be a duration like 500ms, 2s or 1m");
  // HTTPS unless told otherwise: the CA from --ca, BATON_CA_FILE or the
  // config file (else the system's roots); plaintext with --insecure,
  // BATON_INSECURE=1 or `insecure: true`.
  const bool insecure = insecure_flag || env("BATON_INSECURE").value_or("") == "1" || fc.insecure.value_or(false);
  const std::string ca = global.count("--ca") ? global["--ca"] : env("BATON_CA_FILE").value_or(fc.ca_file.value_or(""));
  if (insecure && global.count("--ca")) return call.usage("--ca and --insecure: give one");
  std::optional<tls::ClientFiles> tls_files;
  if (!insecure) tls_files = tls::ClientFiles{ca, "", ""};
  // Said on stderr, every time: both are fine for a try-out, neither for a
  // fleet (docs/ctl.md, "Connecting").
  if (global.count("--token"))
    call.err << "warning: --token shows the token to every user of this host (the process list) and keeps it in "
                "your shell's history; use --token-file or BATON_TOKEN_FILE\n";
  if (insecure && !loopback_address(addr))
    call.err << "warning: plaintext (insecure): the token and every answer cross the network unencrypted to " << addr
             << "\n";
  call.api = ApiClient(addr, token.value_or(""), *timeout, tls_files);
  try {
    if (call.output == "jsonl" || call.output == "yaml") {
      // The verb prints JSON; it is printed again in the asked format once
      // the verb is done (a streaming verb's output comes at its end).
      std::ostringstream printed;
      Call machine(call.api, printed, call.err);
      machine.verb = call.verb;
      machine.args = call.args;
      machine.flags = call.flags;
      machine.output = call.output;
      machine.terminal = call.terminal;
      const int code = verb->run(machine);
      print_as(out, printed.str(), call.output);
      return code;
    }
    return verb->run(call);
  } catch (const std::exception& e) {
    // An answer that is not the JSON the API documents.
    return call.error(exit_unavailable, "unexpected answer from " + addr + ": " + e.what());
  }
}

}  // namespace baton::ctl
