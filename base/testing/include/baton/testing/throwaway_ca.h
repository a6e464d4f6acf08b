#pragma once
// A certificate authority for tests, made by scripts/throwaway-ca in a fresh
// directory that is removed when the object goes. Nodes started by tests
// serve node.crt (it names 127.0.0.1); clients trust ca.crt. Needs
// BATON_SOURCE_DIR (every test target and the chaos harness define it).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace baton::testing {

class ThrowawayCa {
 public:
  /// A new CA with a node certificate and certificates for `workers`.
  explicit ThrowawayCa(const std::vector<std::string>& workers = {}) {
    char tmpl[] = "/tmp/baton-test-ca-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp");
    dir_ = tmpl;
    add_workers(workers);
  }
  ~ThrowawayCa() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  ThrowawayCa(const ThrowawayCa&) = delete;
  ThrowawayCa& operator=(const ThrowawayCa&) = delete;

  /// The CA that the nodes of every test Cluster use (made at first use).
  static ThrowawayCa& shared() {
    static ThrowawayCa ca;
    return ca;
  }

  /// Issues client certificates naming each worker id (kept if present).
  void add_workers(const std::vector<std::string>& workers) {
    std::string cmd = std::string(BATON_SOURCE_DIR) + "/scripts/throwaway-ca " + dir_;
    if (!workers.empty()) cmd += " worker";
    for (const auto& w : workers) cmd += " " + w;
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  }

  /// Tests only: a certificate naming `worker` but made for a server
  /// (`usage` "server-usage": extendedKeyUsage serverAuth) or stating no use
  /// ("no-usage"), which a node must refuse as a worker's.
  void add_non_client_certificate(const std::string& usage, const std::string& worker) {
    const std::string cmd =
        std::string(BATON_SOURCE_DIR) + "/scripts/throwaway-ca " + dir_ + " " + usage + " " + worker;
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  }

  const std::string& dir() const { return dir_; }
  std::string ca() const { return dir_ + "/ca.crt"; }
  std::string node_cert() const { return dir_ + "/node.crt"; }
  std::string node_key() const { return dir_ + "/node.key"; }
  std::string cert(const std::string& worker) const { return dir_ + "/" + worker + ".crt"; }
  std::string key(const std::string& worker) const { return dir_ + "/" + worker + ".key"; }

  /// base64(SHA-256(the node key's SubjectPublicKeyInfo)): what Chromium's
  /// --ignore-certificate-errors-spki-list takes to trust this node alone.
  std::string node_spki_sha256() const {
    const std::string cmd = "openssl x509 -in " + node_cert() +
                            " -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | "
                            "base64";
    std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), ::pclose);
    std::string out;
    char buf[128];
    while (p && std::fgets(buf, sizeof buf, p.get())) out += buf;
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
  }

 private:
  std::string dir_;
};

}  // namespace baton::testing
