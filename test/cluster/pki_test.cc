#include "test/cluster/pki.h"

#include <memory>

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>

namespace gpuop::test {
namespace {

namespace fs = std::filesystem;

X509* LoadCert(const fs::path& path) {
  FILE* f = fopen(path.c_str(), "r");
  if (f == nullptr) return nullptr;
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  fclose(f);
  return cert;
}

// Verifies `leaf` against `ca` for `purpose` (X509_PURPOSE_SSL_SERVER or _CLIENT).
int Verify(X509* ca, X509* leaf, int purpose) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_STORE_CTX_set_purpose(ctx, purpose);
  const int ok = X509_verify_cert(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return ok;
}

std::string NameEntry(X509* cert, int nid) {
  char buf[256] = {0};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), nid, buf, sizeof(buf));
  return buf;
}

class PkiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/gpuop-pki-test-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = templ;
    auto pki = GeneratePki(dir_ / "pki");
    ASSERT_TRUE(pki.ok()) << pki.status();
    pki_ = *pki;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  Pki pki_;
};

TEST_F(PkiTest, ServingCertificateChainsToCaAndCoversLoopback) {
  std::unique_ptr<X509, decltype(&X509_free)> ca(LoadCert(pki_.ca_cert), X509_free);
  std::unique_ptr<X509, decltype(&X509_free)> serving(LoadCert(pki_.serving_cert), X509_free);
  ASSERT_TRUE(ca && serving);
  EXPECT_EQ(Verify(ca.get(), serving.get(), X509_PURPOSE_SSL_SERVER), 1);
  EXPECT_EQ(X509_check_ip_asc(serving.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_host(serving.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(serving.get(), "kubernetes.default.svc", 0, 0, nullptr), 1);
  EXPECT_NE(X509_check_ip_asc(serving.get(), "10.1.2.3", 0), 1);
}

TEST_F(PkiTest, AdminIsAClientInSystemMasters) {
  std::unique_ptr<X509, decltype(&X509_free)> ca(LoadCert(pki_.ca_cert), X509_free);
  std::unique_ptr<X509, decltype(&X509_free)> admin(LoadCert(pki_.admin_cert), X509_free);
  ASSERT_TRUE(ca && admin);
  EXPECT_EQ(Verify(ca.get(), admin.get(), X509_PURPOSE_SSL_CLIENT), 1);
  EXPECT_NE(Verify(ca.get(), admin.get(), X509_PURPOSE_SSL_SERVER), 1);
  EXPECT_EQ(NameEntry(admin.get(), NID_organizationName), "system:masters");
  EXPECT_EQ(NameEntry(admin.get(), NID_commonName), "gpuop-test-admin");
}

TEST_F(PkiTest, IssuedClientCertificateHasUserAndGroup) {
  auto path = IssueClientCert(pki_, "alice", "team-a", "alice");
  ASSERT_TRUE(path.ok()) << path.status();
  std::unique_ptr<X509, decltype(&X509_free)> cert(LoadCert(*path), X509_free);
  ASSERT_TRUE(cert);
  EXPECT_EQ(NameEntry(cert.get(), NID_commonName), "alice");
  EXPECT_EQ(NameEntry(cert.get(), NID_organizationName), "team-a");
  EXPECT_TRUE(fs::exists(pki_.dir / "alice.key"));
}

TEST_F(PkiTest, ServiceAccountKeysMatchAndPrivateKeysArePrivate) {
  FILE* f = fopen(pki_.service_account_key.c_str(), "r");
  ASSERT_NE(f, nullptr);
  EVP_PKEY* priv = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
  fclose(f);
  f = fopen(pki_.service_account_pub.c_str(), "r");
  ASSERT_NE(f, nullptr);
  EVP_PKEY* pub = PEM_read_PUBKEY(f, nullptr, nullptr, nullptr);
  fclose(f);
  ASSERT_TRUE(priv && pub);
  EXPECT_EQ(EVP_PKEY_eq(priv, pub), 1);
  EVP_PKEY_free(priv);
  EVP_PKEY_free(pub);

  for (const fs::path& key :
       {pki_.ca_key, pki_.serving_key, pki_.admin_key, pki_.service_account_key}) {
    const fs::perms perms = fs::status(key).permissions();
    EXPECT_EQ(perms & (fs::perms::group_all | fs::perms::others_all), fs::perms::none) << key;
  }
}

TEST_F(PkiTest, EachGenerationHasItsOwnCa) {
  auto other = GeneratePki(dir_ / "other");
  ASSERT_TRUE(other.ok()) << other.status();
  std::unique_ptr<X509, decltype(&X509_free)> ca(LoadCert(pki_.ca_cert), X509_free);
  std::unique_ptr<X509, decltype(&X509_free)> foreign(LoadCert(other->admin_cert), X509_free);
  EXPECT_NE(Verify(ca.get(), foreign.get(), X509_PURPOSE_SSL_CLIENT), 1);
}

}  // namespace
}  // namespace gpuop::test
