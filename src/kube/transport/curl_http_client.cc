#include "kube/transport/curl_http_client.h"

#include <mutex>

#include <curl/curl.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace gpuop::kube {
namespace {

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// State shared with libcurl's callbacks during one exchange.
struct Exchange {
  CURL* curl = nullptr;
  HttpResponse* response = nullptr;
  const HttpClient::DataHandler* on_data = nullptr;  // set for streams
  bool decided = false;                              // whether the body goes to on_data was decided
  bool streaming = false;                            // the body goes to on_data
  bool handler_ended = false;
  bool stopped = false;
};

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t n = size * count;
  if (ex->on_data != nullptr && !ex->decided) {
    long status = 0;
    curl_easy_getinfo(ex->curl, CURLINFO_RESPONSE_CODE, &status);
    ex->decided = true;
    ex->streaming = status >= 200 && status < 300;
  }
  if (!ex->streaming) {
    ex->response->body.append(data, n);
    return n;
  }
  if (!(*ex->on_data)(absl::string_view(data, n))) {
    ex->handler_ended = true;
    return 0;  // Makes libcurl end the transfer.
  }
  return n;
}

// Runs a transfer on a multi handle so that `stop` can interrupt it at once: a stop callback
// wakes the poll, which the loop answers by ending the transfer. Returns the transfer's result,
// or CURLE_OK with `stopped` set.
CURLcode PerformStoppable(CURL* curl, const std::stop_token& stop, bool& stopped) {
  CURLM* multi = curl_multi_init();
  if (multi == nullptr) return CURLE_OUT_OF_MEMORY;
  curl_multi_add_handle(multi, curl);
  CURLcode result = CURLE_OK;
  {
    std::stop_callback wake(stop, [multi] { curl_multi_wakeup(multi); });
    int running = 1;
    while (running > 0) {
      if (stop.stop_requested()) {
        stopped = true;
        break;
      }
      if (curl_multi_perform(multi, &running) != CURLM_OK) {
        result = CURLE_RECV_ERROR;
        break;
      }
      if (running == 0) break;
      curl_multi_poll(multi, nullptr, 0, /*timeout_ms=*/1000, nullptr);
    }
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg == CURLMSG_DONE && msg->easy_handle == curl) result = msg->data.result;
    }
  }
  curl_multi_remove_handle(multi, curl);
  curl_multi_cleanup(multi);
  return result;
}

size_t AppendHeader(char* data, size_t size, size_t count, void* user) {
  auto* response = static_cast<HttpResponse*>(user);
  absl::string_view line(data, size * count);
  // A new status line starts a new header block (redirects, 100 Continue): keep the last one.
  if (absl::StartsWith(line, "HTTP/")) {
    response->headers.clear();
    return size * count;
  }
  const size_t colon = line.find(':');
  if (colon != absl::string_view::npos) {
    response->headers.emplace_back(std::string(absl::StripAsciiWhitespace(line.substr(0, colon))),
                                   std::string(absl::StripAsciiWhitespace(line.substr(colon + 1))));
  }
  return size * count;
}

curl_blob Blob(const std::string& pem) {
  return curl_blob{
      .data = const_cast<char*>(pem.data()), .len = pem.size(), .flags = CURL_BLOB_NOCOPY};
}

}  // namespace

absl::string_view HttpResponse::Header(absl::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (absl::EqualsIgnoreCase(key, name)) return value;
  }
  return {};
}

absl::StatusOr<std::unique_ptr<CurlHttpClient>> CurlHttpClient::Create(
    CurlHttpClientOptions options) {
  if (options.tls.client_cert_pem.empty() != options.tls.client_key_pem.empty()) {
    return absl::InvalidArgumentError(
        "http client: a client certificate and its key must be given together");
  }
  InitCurlOnce();
  return std::unique_ptr<CurlHttpClient>(new CurlHttpClient(std::move(options)));
}

CurlHttpClient::~CurlHttpClient() {
  absl::MutexLock lock(&mu_);
  for (void* handle : idle_) curl_easy_cleanup(handle);
}

void* CurlHttpClient::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      void* handle = idle_.back();
      idle_.pop_back();
      return handle;
    }
  }
  return curl_easy_init();
}

void CurlHttpClient::Release(void* handle) {
  curl_easy_reset(handle);  // Keeps live connections and the session cache.
  absl::MutexLock lock(&mu_);
  idle_.push_back(handle);
}

absl::StatusOr<HttpResponse> CurlHttpClient::Send(const HttpRequest& request) {
  return Perform(request, nullptr, nullptr);
}

absl::StatusOr<HttpResponse> CurlHttpClient::Stream(const HttpRequest& request,
                                                    const DataHandler& on_data,
                                                    std::stop_token stop) {
  return Perform(request, &on_data, &stop);
}

absl::StatusOr<HttpResponse> CurlHttpClient::Perform(const HttpRequest& request,
                                                     const DataHandler* on_data,
                                                     const std::stop_token* stop) {
  if (!absl::StartsWith(request.url, "https://") && !absl::StartsWith(request.url, "http://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("http ", request.method, " ", request.url, ": not an http(s) URL"));
  }
  CURL* curl = Acquire();
  if (curl == nullptr) return absl::ResourceExhaustedError("http: curl_easy_init failed");

  HttpResponse response;
  Exchange exchange{.curl = curl, .response = &response, .on_data = on_data};
  curl_slist* headers = nullptr;
  for (const auto& [key, value] : request.headers) {
    headers = curl_slist_append(headers, absl::StrCat(key, ": ", value).c_str());
  }
  // Without this curl sends "Expect: 100-continue" for large bodies and waits for the server.
  headers = curl_slist_append(headers, "Expect:");

  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (request.method == "HEAD") curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
      request.method == "PATCH") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &exchange);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &AppendHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(request.timeout)));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(options_.connect_timeout)));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!options_.user_agent.empty()) {
    curl_easy_setopt(curl, CURLOPT_USERAGENT, options_.user_agent.c_str());
  }
  curl_blob ca = Blob(options_.tls.ca_pem);
  curl_blob cert = Blob(options_.tls.client_cert_pem);
  curl_blob key = Blob(options_.tls.client_key_pem);
  if (!options_.tls.ca_pem.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &ca);
  if (!options_.tls.client_cert_pem.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &key);
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
  }

  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  const CURLcode code =
      stop != nullptr ? PerformStoppable(curl, *stop, exchange.stopped) : curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  Release(curl);
  response.status = static_cast<int>(status);

  // Ends requested by the caller are normal ends of a stream.
  if ((code == CURLE_WRITE_ERROR && exchange.handler_ended) || exchange.stopped) {
    return response;
  }
  if (code != CURLE_OK) {
    const std::string what = absl::StrCat("http ", request.method, " ", request.url, ": ",
                                          error[0] != '\0' ? error : curl_easy_strerror(code));
    if (code == CURLE_OPERATION_TIMEDOUT) return absl::DeadlineExceededError(what);
    if (code == CURLE_URL_MALFORMAT || code == CURLE_UNSUPPORTED_PROTOCOL) {
      return absl::InvalidArgumentError(what);
    }
    return absl::UnavailableError(what);
  }
  return response;
}

}  // namespace gpuop::kube
