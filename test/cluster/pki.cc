#include "test/cluster/pki.h"

#include <atomic>
#include <functional>
#include <memory>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gpuop::test {
namespace {

namespace fs = std::filesystem;

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;

absl::Status OpenSslError(const std::string& what) {
  const unsigned long code = ERR_get_error();
  char buf[256] = "unknown error";
  if (code != 0) ERR_error_string_n(code, buf, sizeof(buf));
  ERR_clear_error();
  return absl::InternalError(absl::StrCat("pki: ", what, ": ", buf));
}

absl::StatusOr<Key> NewKey() {
  Key key(EVP_EC_gen("P-256"));
  if (!key) return OpenSslError("generate EC P-256 key");
  return key;
}

struct CertSpec {
  std::string common_name;
  std::string organization;  // Kubernetes reads O as the group.
  bool is_ca = false;
  bool server = false;
  bool client = false;
  std::string subject_alt_names;  // "IP:127.0.0.1,DNS:localhost"
};

absl::Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return OpenSslError(absl::StrCat("extension ", OBJ_nid2sn(nid), "=", value));
  const int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return ok == 1 ? absl::OkStatus() : OpenSslError("add extension");
}

// Issues a certificate for `key` described by `spec`, signed by `issuer`/`issuer_key`, or
// self-signed when `issuer` is null.
absl::StatusOr<Cert> Issue(const CertSpec& spec, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key,
                           long serial) {
  Cert cert(X509_new());
  if (!cert) return OpenSslError("X509_new");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  // Backdated an hour so clock differences between processes never make it "not yet valid".
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 60L * 60 * 24 * 365);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  auto add_name = [name](const char* field, const std::string& value) {
    X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1, 0);
  };
  if (!spec.organization.empty()) add_name("O", spec.organization);
  add_name("CN", spec.common_name);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));

  GPUOP_RETURN_IF_ERROR(AddExtension(cert.get(), signer, NID_basic_constraints,
                                     spec.is_ca ? "critical,CA:TRUE" : "critical,CA:FALSE"));
  GPUOP_RETURN_IF_ERROR(AddExtension(cert.get(), signer, NID_key_usage,
                                     spec.is_ca ? "critical,keyCertSign,cRLSign,digitalSignature"
                                                : "critical,digitalSignature,keyEncipherment"));
  GPUOP_RETURN_IF_ERROR(AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash"));
  if (issuer != nullptr) {
    GPUOP_RETURN_IF_ERROR(
        AddExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always"));
  }
  std::string usage;
  if (spec.server) usage = "serverAuth";
  if (spec.client) usage += usage.empty() ? "clientAuth" : ",clientAuth";
  if (!usage.empty()) {
    GPUOP_RETURN_IF_ERROR(AddExtension(cert.get(), signer, NID_ext_key_usage, usage));
  }
  if (!spec.subject_alt_names.empty()) {
    GPUOP_RETURN_IF_ERROR(
        AddExtension(cert.get(), signer, NID_subject_alt_name, spec.subject_alt_names));
  }
  if (X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) == 0) {
    return OpenSslError(absl::StrCat("sign certificate ", spec.common_name));
  }
  return cert;
}

absl::Status WritePem(const fs::path& path, bool secret, const std::function<int(BIO*)>& write) {
  const fs::path tmp = fs::path(path).concat(".tmp");
  std::unique_ptr<BIO, BioFree> bio(BIO_new_file(tmp.c_str(), "w"));
  if (!bio) return OpenSslError(absl::StrCat("open ", tmp.string()));
  if (secret) {
    std::error_code ec;
    fs::permissions(tmp, fs::perms::owner_read | fs::perms::owner_write, ec);
    if (ec)
      return absl::InternalError(absl::StrCat("pki: chmod ", tmp.string(), ": ", ec.message()));
  }
  if (write(bio.get()) != 1) return OpenSslError(absl::StrCat("write ", path.string()));
  bio.reset();
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("pki: rename ", path.string(), ": ", ec.message()));
  return absl::OkStatus();
}

absl::Status WriteKey(const fs::path& path, EVP_PKEY* key) {
  return WritePem(path, /*secret=*/true, [key](BIO* bio) {
    return PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  });
}

absl::Status WriteCert(const fs::path& path, X509* cert) {
  return WritePem(path, /*secret=*/false,
                  [cert](BIO* bio) { return PEM_write_bio_X509(bio, cert); });
}

absl::StatusOr<Key> ReadKey(const fs::path& path) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_file(path.c_str(), "r"));
  if (!bio) return OpenSslError(absl::StrCat("open ", path.string()));
  Key key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) return OpenSslError(absl::StrCat("read key ", path.string()));
  return key;
}

absl::StatusOr<Cert> ReadCert(const fs::path& path) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_file(path.c_str(), "r"));
  if (!bio) return OpenSslError(absl::StrCat("open ", path.string()));
  Cert cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) return OpenSslError(absl::StrCat("read certificate ", path.string()));
  return cert;
}

// Serial numbers only need to be unique per CA; a counter per process is enough because every
// control plane generates its own CA.
long NextSerial() {
  static std::atomic<long> serial{1};
  return ++serial;
}

}  // namespace

absl::StatusOr<Pki> GeneratePki(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("pki: mkdir ", dir.string(), ": ", ec.message()));

  Pki pki;
  pki.dir = dir;
  pki.ca_cert = dir / "ca.crt";
  pki.ca_key = dir / "ca.key";
  pki.serving_cert = dir / "serving.crt";
  pki.serving_key = dir / "serving.key";
  pki.admin_cert = dir / "admin.crt";
  pki.admin_key = dir / "admin.key";
  pki.service_account_key = dir / "sa.key";
  pki.service_account_pub = dir / "sa.pub";

  GPUOP_ASSIGN_OR_RETURN(Key ca_key, NewKey());
  GPUOP_ASSIGN_OR_RETURN(Cert ca, Issue({.common_name = "gpuop-test-ca", .is_ca = true},
                                        ca_key.get(), nullptr, nullptr, NextSerial()));
  GPUOP_RETURN_IF_ERROR(WriteKey(pki.ca_key, ca_key.get()));
  GPUOP_RETURN_IF_ERROR(WriteCert(pki.ca_cert, ca.get()));

  GPUOP_ASSIGN_OR_RETURN(Key serving_key, NewKey());
  GPUOP_ASSIGN_OR_RETURN(
      Cert serving,
      Issue({.common_name = "kube-apiserver",
             .server = true,
             .subject_alt_names =
                 "IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
                 "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,"
                 "IP:10.96.0.1"},
            serving_key.get(), ca.get(), ca_key.get(), NextSerial()));
  GPUOP_RETURN_IF_ERROR(WriteKey(pki.serving_key, serving_key.get()));
  GPUOP_RETURN_IF_ERROR(WriteCert(pki.serving_cert, serving.get()));

  GPUOP_ASSIGN_OR_RETURN(Key sa_key, NewKey());
  GPUOP_RETURN_IF_ERROR(WriteKey(pki.service_account_key, sa_key.get()));
  GPUOP_RETURN_IF_ERROR(WritePem(pki.service_account_pub, /*secret=*/false, [&](BIO* bio) {
    return PEM_write_bio_PUBKEY(bio, sa_key.get());
  }));

  GPUOP_RETURN_IF_ERROR(
      IssueClientCert(pki, "gpuop-test-admin", "system:masters", "admin").status());
  return pki;
}

absl::StatusOr<fs::path> IssueClientCert(const Pki& pki, const std::string& user,
                                         const std::string& group, const std::string& file_stem) {
  GPUOP_ASSIGN_OR_RETURN(Key ca_key, ReadKey(pki.ca_key));
  GPUOP_ASSIGN_OR_RETURN(Cert ca, ReadCert(pki.ca_cert));
  GPUOP_ASSIGN_OR_RETURN(Key key, NewKey());
  GPUOP_ASSIGN_OR_RETURN(
      Cert cert, Issue({.common_name = user, .organization = group, .client = true}, key.get(),
                       ca.get(), ca_key.get(), NextSerial()));
  const fs::path cert_path = pki.dir / (file_stem + ".crt");
  GPUOP_RETURN_IF_ERROR(WriteKey(pki.dir / (file_stem + ".key"), key.get()));
  GPUOP_RETURN_IF_ERROR(WriteCert(cert_path, cert.get()));
  return cert_path;
}

}  // namespace gpuop::test
