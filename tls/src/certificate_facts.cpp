#include "baton/tls/certificate_facts.h"

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>
#include <cstdio>
#include <memory>

namespace baton::tls {

namespace {

using X509Ptr = std::unique_ptr<X509, void (*)(X509*)>;

X509Ptr load(const std::string& file) {
  X509Ptr none(nullptr, X509_free);
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(file.c_str(), "r"), std::fclose);
  if (!f) return none;
  return X509Ptr(PEM_read_X509(f.get(), nullptr, nullptr, nullptr), X509_free);
}

}  // namespace

Result<CertificateFacts> read_certificate(const std::string& file) {
  auto cert = load(file);
  if (!cert) return make_error(Errc::bad_config, "no PEM certificate in '" + file + "'");
  CertificateFacts out;
  if (auto* name = X509_get_subject_name(cert.get())) {
    std::unique_ptr<BIO, int (*)(BIO*)> bio(BIO_new(BIO_s_mem()), BIO_free);
    X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_ONELINE & ~ASN1_STRFLGS_ESC_MSB);
    char* data = nullptr;
    long n = BIO_get_mem_data(bio.get(), &data);
    out.subject.assign(data, static_cast<std::size_t>(n));
  }
  if (auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr))) {
    for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
      const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
      if (g->type == GEN_DNS) {
        out.names.push_back("DNS:" + std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(g->d.dNSName)),
                                                 static_cast<std::size_t>(ASN1_STRING_length(g->d.dNSName))));
      } else if (g->type == GEN_IPADD) {
        const unsigned char* b = ASN1_STRING_get0_data(g->d.iPAddress);
        const int len = ASN1_STRING_length(g->d.iPAddress);
        if (len == 4) {
          boost::asio::ip::address_v4::bytes_type v4{b[0], b[1], b[2], b[3]};
          out.names.push_back("IP:" + boost::asio::ip::address_v4(v4).to_string());
        } else if (len == 16) {
          boost::asio::ip::address_v6::bytes_type v6;
          for (int k = 0; k < 16; ++k) v6[static_cast<std::size_t>(k)] = b[k];
          out.names.push_back("IP:" + boost::asio::ip::address_v6(v6).to_string());
        }
      }
    }
    GENERAL_NAMES_free(sans);
  }
  int days = 0, seconds = 0;
  if (ASN1_TIME_diff(&days, &seconds, nullptr, X509_get0_notAfter(cert.get())) == 1)
    out.not_after_unix = static_cast<double>(std::time(nullptr)) + days * 86400.0 + seconds;
  out.self_signed = X509_check_issued(cert.get(), cert.get()) == X509_V_OK;
  return out;
}

bool certificate_names_host(const std::string& file, const std::string& host) {
  auto cert = load(file);
  if (!cert) return false;
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  if (!ec) return X509_check_ip_asc(cert.get(), host.c_str(), 0) == 1;
  return X509_check_host(cert.get(), host.c_str(), host.size(), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS, nullptr) == 1;
}

}  // namespace baton::tls
