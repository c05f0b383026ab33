#ifndef GPUOP_COMMON_HTTP_SERVER_H_
#define GPUOP_COMMON_HTTP_SERVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gpuop::http {

// A small HTTP/1.1 server for a process's own endpoints (/metrics, /healthz): GET and HEAD on
// exact paths, one response per connection. It is built to be exposed on a node's network:
// every connection has a deadline (a client that sends its request slowly, or reads the answer
// slowly, is dropped), requests are size-limited, the number of open connections is capped, and
// nothing a client sends can make it allocate more than `max_request_bytes` per connection.

struct Request {
  std::string method;     // "GET"; case-sensitive, as HTTP says
  std::string target;     // as sent: "/metrics?debug=1"
  std::string path;       // the target up to '?': "/metrics"
  std::string query;      // after '?', undecoded; "" when none
  int version_minor = 1;  // HTTP/1.<minor>
  // Header fields with lower-cased names, in arrival order.
  std::vector<std::pair<std::string, std::string>> headers;

  // The value of the first header named `name` (lower case), or "" when absent.
  absl::string_view Header(absl::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  // The body is `shared_body` (when set) followed by `body`. `shared_body` lets a handler serve
  // a large immutable text it keeps elsewhere without copying it per request.
  std::shared_ptr<const std::string> shared_body;
  std::string body;
  // Further header fields. Content-Type, Content-Length and Connection are set by the server.
  std::vector<std::pair<std::string, std::string>> headers;

  // A plain-text response: `text` plus a newline.
  static Response Text(int status, absl::string_view text);
};

// Runs on the server's thread for each request to its path, GET or HEAD (for HEAD the body is
// computed and discarded). It must be quick and must not block: every connection waits for it.
using Handler = std::function<Response(const Request&)>;

struct ServerOptions {
  // Numeric address to bind: "127.0.0.1", "::1", "0.0.0.0", "::". Empty: every address, IPv6
  // and IPv4 (falls back to IPv4 only where IPv6 is unavailable).
  std::string host;
  // 0: the kernel picks a free port; port() tells which.
  int port = 0;
  // Connections open at once; more are answered 503 and closed at once.
  int max_connections = 64;
  // Limit of the request line and header fields together; larger requests get 431.
  size_t max_request_bytes = 8 * 1024;
  size_t max_header_fields = 64;
  // From accept to the end of the request's header fields.
  absl::Duration read_timeout = absl::Seconds(5);
  // For the whole response to be written.
  absl::Duration write_timeout = absl::Seconds(10);
};

// Counts since Start(), for tests and self-metrics.
struct ServerStats {
  int64_t connections = 0;   // accepted and served or timed out
  int64_t rejected = 0;      // answered 503 at the connection limit
  int64_t requests = 0;      // complete requests answered, errors included
  int64_t timeouts = 0;      // connections dropped at their read or write deadline
  int64_t bad_requests = 0;  // answered 400, 405, 431 or 505
};

// Splits a listen address into host and port: ":9400" (every address), "0.0.0.0:9400",
// "127.0.0.1:0", "[::1]:9400". InvalidArgument naming the address otherwise.
[[nodiscard]] absl::StatusOr<std::pair<std::string, int>> ParseListenAddress(
    absl::string_view address);

// Deadlines are in real time (they bound socket I/O, not program logic).
//
// Thread-safe. Handle() must be called before Start(). Stop() (or destruction) closes the
// listening socket and every connection and returns once the server's thread has exited,
// which is prompt: it never waits for a client. A handler must not call Stop().
class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves `handler` on exactly `path` ("/metrics"; a query string does not change the path).
  // Requests to other paths get 404, methods other than GET and HEAD 405.
  void Handle(std::string path, Handler handler);

  // Binds, listens and starts serving. InvalidArgument for a bad host; the errno of bind
  // (Unavailable for EADDRINUSE, PermissionDenied for EACCES) naming the address otherwise;
  // FailedPrecondition when already started.
  [[nodiscard]] absl::Status Start();
  void Stop();

  // The bound port, once started.
  int port() const { return port_.load(); }
  ServerStats stats() const;

 private:
  struct Connection;
  struct Counters {
    std::atomic<int64_t> connections{0}, rejected{0}, requests{0}, timeouts{0}, bad_requests{0};
  };

  // Binds and listens on a numeric address; `error` gets the errno of a failure.
  absl::StatusOr<int> Listen(const std::string& host, int port, bool dual_stack, int& error);
  void Run(std::stop_token stop);
  // Accepts what is pending; returns the errno that stopped it (0 after a full batch).
  int AcceptAll(std::vector<std::unique_ptr<Connection>>& connections);
  // Reads what is available; returns false when the connection is to be closed.
  bool OnReadable(Connection& c);
  bool OnWritable(Connection& c);
  void Respond(Connection& c, const Request& request);
  void Fail(Connection& c, int status, absl::string_view reason);
  void Prepare(Connection& c, Response response, bool head_only);

  const ServerOptions options_;
  absl::Mutex lifecycle_mu_;  // serializes Start and Stop
  std::map<std::string, Handler, std::less<>> handlers_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<int> port_{0};
  Counters counters_;
  std::jthread thread_;
};

}  // namespace gpuop::http

#endif  // GPUOP_COMMON_HTTP_SERVER_H_
