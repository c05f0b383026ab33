#include "common/http/server.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "common/http/internal/request_parser.h"

namespace gpuop::http {
namespace {

// After the response, the server reads (and drops) what the client still sends for this long
// before closing, so that unread input does not turn the close into a reset that could destroy
// the response in flight.
constexpr absl::Duration kLinger = absl::Seconds(1);
constexpr size_t kMaxDrainBytes = 64 * 1024;
// Pause after accept fails for lack of file descriptors, instead of spinning on the readable
// listening socket.
constexpr absl::Duration kAcceptBackoff = absl::Milliseconds(100);
constexpr int kAcceptBatch = 64;

constexpr char kOverloaded[] =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
    "Content-Length: 12\r\nConnection: close\r\n\r\ntoo busy\r\n\r\n";

bool HasLineBreak(absl::string_view s) {
  return s.find_first_of("\r\n") != absl::string_view::npos;
}

int PollTimeoutMs(absl::Time now, absl::Time next) {
  if (next == absl::InfiniteFuture()) return -1;
  if (next <= now) return 0;
  const int64_t ms = absl::ToInt64Milliseconds(absl::Ceil(next - now, absl::Milliseconds(1)));
  return static_cast<int>(std::min<int64_t>(ms, INT_MAX));
}

absl::Status SocketError(absl::string_view what, absl::string_view address) {
  const int error = errno;
  const std::string message = absl::StrCat(what, " ", address, ": ", std::strerror(error));
  // A port in use is usually a previous instance still exiting: worth a retry.
  if (error == EADDRINUSE) return absl::UnavailableError(message);
  return absl::Status(absl::ErrnoToStatusCode(error), message);
}

}  // namespace

struct Server::Connection {
  enum class State { kReading, kWriting, kDraining };

  explicit Connection(int socket) : fd(socket) {}
  ~Connection() { close(fd); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const int fd;
  State state = State::kReading;
  absl::Time deadline;
  std::string input;
  size_t scanned = 0;  // input before this holds no line end
  // The response: head, then shared_body, then body; `sent` counts over all three.
  std::string head;
  std::shared_ptr<const std::string> shared_body;
  std::string body;
  size_t sent = 0;
  size_t drained = 0;
};

Server::Server(ServerOptions options) : options_(std::move(options)) {}

Server::~Server() { Stop(); }

void Server::Handle(std::string path, Handler handler) {
  handlers_[std::move(path)] = std::move(handler);
}

absl::Status Server::Start() {
  absl::MutexLock lock(&lifecycle_mu_);
  if (thread_.joinable()) return absl::FailedPreconditionError("http server: already started");
  int error = 0;
  absl::StatusOr<int> fd = options_.host.empty()
                               ? Listen("::", options_.port, /*dual_stack=*/true, error)
                               : Listen(options_.host, options_.port, false, error);
  if (!fd.ok() && options_.host.empty() &&
      (error == EAFNOSUPPORT || error == EADDRNOTAVAIL || error == EPROTONOSUPPORT)) {
    // IPv6 is off on this machine: every IPv4 address instead.
    fd = Listen("0.0.0.0", options_.port, false, error);
  }
  if (!fd.ok()) return fd.status();
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    absl::Status status = SocketError("http server: eventfd for port", absl::StrCat(port_.load()));
    close(*fd);
    return status;
  }
  listen_fd_ = *fd;
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
  return absl::OkStatus();
}

absl::StatusOr<int> Server::Listen(const std::string& host, int port, bool dual_stack, int& error) {
  const std::string address = absl::StrCat(
      host.find(':') != std::string::npos ? absl::StrCat("[", host, "]") : host, ":", port);
  sockaddr_storage storage{};
  socklen_t length = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    length = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    length = sizeof(sockaddr_in6);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("http server: \"", host, "\" is not a numeric IPv4 or IPv6 address"));
  }
  const int fd = socket(storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = errno;
    return SocketError("http server: socket for", address);
  }
  const int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (dual_stack) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
  if (bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0 || listen(fd, SOMAXCONN) != 0) {
    error = errno;
    absl::Status status = SocketError("http server: listen on", address);
    close(fd);
    return status;
  }
  length = sizeof(storage);
  getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length);
  port_ = ntohs(storage.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
  return fd;
}

void Server::Stop() {
  absl::MutexLock lock(&lifecycle_mu_);
  if (!thread_.joinable()) return;
  thread_.request_stop();
  const uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) < 0) {
    // The counter cannot overflow from one write; the thread also polls with a deadline.
  }
  thread_.join();
  close(listen_fd_);
  close(wake_fd_);
  listen_fd_ = wake_fd_ = -1;
}

ServerStats Server::stats() const {
  return ServerStats{.connections = counters_.connections.load(),
                     .rejected = counters_.rejected.load(),
                     .requests = counters_.requests.load(),
                     .timeouts = counters_.timeouts.load(),
                     .bad_requests = counters_.bad_requests.load()};
}

void Server::Run(std::stop_token stop) {
  std::vector<std::unique_ptr<Connection>> connections;
  std::vector<pollfd> fds;
  absl::Time accept_paused_until = absl::InfinitePast();
  while (!stop.stop_requested()) {
    absl::Time now = absl::Now();
    const bool accepting = now >= accept_paused_until;
    absl::Time next = accepting ? absl::InfiniteFuture() : accept_paused_until;
    fds.clear();
    fds.push_back({.fd = wake_fd_, .events = POLLIN, .revents = 0});
    fds.push_back({.fd = accepting ? listen_fd_ : -1, .events = POLLIN, .revents = 0});
    for (const auto& c : connections) {
      const short events = c->state == Connection::State::kWriting ? POLLOUT : POLLIN;
      fds.push_back({.fd = c->fd, .events = events, .revents = 0});
      next = std::min(next, c->deadline);
    }
    if (poll(fds.data(), fds.size(), PollTimeoutMs(now, next)) < 0 && errno != EINTR) {
      // Only a kernel out of memory gets here; try again shortly.
      absl::SleepFor(absl::Milliseconds(10));
      continue;
    }
    if (fds[0].revents != 0) {
      uint64_t value = 0;
      if (read(wake_fd_, &value, sizeof(value)) < 0) {
        // Nothing to drain; the loop condition decides.
      }
      continue;
    }
    now = absl::Now();
    for (size_t i = 0; i < connections.size(); ++i) {
      Connection& c = *connections[i];
      const short revents = fds[i + 2].revents;
      bool keep = true;
      if (c.state == Connection::State::kWriting) {
        if (revents & (POLLOUT | POLLERR | POLLHUP)) keep = OnWritable(c);
      } else if (revents & (POLLIN | POLLERR | POLLHUP)) {
        keep = OnReadable(c);
      }
      if (keep && absl::Now() >= c.deadline) {
        if (c.state != Connection::State::kDraining) counters_.timeouts.fetch_add(1);
        keep = false;
      }
      if (!keep) connections[i].reset();
    }
    std::erase(connections, nullptr);
    if (fds[1].revents & POLLIN) {
      const int error = AcceptAll(connections);
      if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM) {
        accept_paused_until = now + kAcceptBackoff;
      }
    }
  }
}

int Server::AcceptAll(std::vector<std::unique_ptr<Connection>>& connections) {
  for (int i = 0; i < kAcceptBatch; ++i) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return errno;
    }
    if (connections.size() >= static_cast<size_t>(options_.max_connections)) {
      if (send(fd, kOverloaded, sizeof(kOverloaded) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        // Best effort: the client sees the connection close either way.
      }
      close(fd);
      counters_.rejected.fetch_add(1);
      continue;
    }
    auto c = std::make_unique<Connection>(fd);
    c->deadline = absl::Now() + options_.read_timeout;
    connections.push_back(std::move(c));
    counters_.connections.fetch_add(1);
  }
  return 0;
}

bool Server::OnReadable(Connection& c) {
  char buffer[4096];
  if (c.state == Connection::State::kDraining) {
    while (true) {
      const ssize_t n = recv(c.fd, buffer, sizeof(buffer), 0);
      if (n > 0) {
        c.drained += static_cast<size_t>(n);
        if (c.drained > kMaxDrainBytes) return false;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
  while (c.input.size() <= options_.max_request_bytes) {
    const size_t room = options_.max_request_bytes + 1 - c.input.size();
    const ssize_t n = recv(c.fd, buffer, std::min(sizeof(buffer), room), 0);
    if (n > 0) {
      c.input.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    return false;  // closed before the request was complete, or a socket error
  }
  // Parse again only when a line has ended since the last attempt.
  if (c.input.find('\n', c.scanned) == std::string::npos &&
      c.input.size() <= options_.max_request_bytes) {
    c.scanned = c.input.size();
    return true;
  }
  c.scanned = c.input.size();
  Request request;
  internal::ParseResult result =
      internal::ParseRequestHead(c.input, options_.max_header_fields, request);
  switch (result.kind) {
    case internal::ParseResult::Kind::kIncomplete:
      if (c.input.size() <= options_.max_request_bytes) return true;
      Fail(c, 431, absl::StrCat("request head larger than ", options_.max_request_bytes, " bytes"));
      break;
    case internal::ParseResult::Kind::kError:
      Fail(c, result.status, result.reason);
      break;
    case internal::ParseResult::Kind::kComplete:
      Respond(c, request);
      break;
  }
  return OnWritable(c);
}

void Server::Respond(Connection& c, const Request& request) {
  auto handler = handlers_.find(request.path);
  if (handler == handlers_.end()) {
    counters_.requests.fetch_add(1);
    Prepare(c, Response::Text(404, "not found"), request.method == "HEAD");
    return;
  }
  if (request.method != "GET" && request.method != "HEAD") {
    Fail(c, 405, absl::StrCat("method ", request.method, " is not allowed"));
    return;
  }
  counters_.requests.fetch_add(1);
  Prepare(c, handler->second(request), request.method == "HEAD");
}

void Server::Fail(Connection& c, int status, absl::string_view reason) {
  counters_.requests.fetch_add(1);
  counters_.bad_requests.fetch_add(1);
  Response response = Response::Text(status, reason);
  if (status == 405) response.headers.emplace_back("Allow", "GET, HEAD");
  Prepare(c, std::move(response), /*head_only=*/false);
}

void Server::Prepare(Connection& c, Response response, bool head_only) {
  const size_t length =
      (response.shared_body ? response.shared_body->size() : 0) + response.body.size();
  if (HasLineBreak(response.content_type)) response.content_type = "text/plain";
  c.head = absl::StrCat("HTTP/1.1 ", response.status, " ", internal::ReasonPhrase(response.status),
                        "\r\nContent-Type: ", response.content_type, "\r\nContent-Length: ", length,
                        "\r\nConnection: close\r\n");
  for (const auto& [name, value] : response.headers) {
    // A handler cannot inject header lines.
    if (HasLineBreak(name) || HasLineBreak(value)) continue;
    absl::StrAppend(&c.head, name, ": ", value, "\r\n");
  }
  c.head += "\r\n";
  if (!head_only) {
    c.shared_body = std::move(response.shared_body);
    c.body = std::move(response.body);
  }
  c.input.clear();
  c.input.shrink_to_fit();
  c.sent = 0;
  c.state = Connection::State::kWriting;
  c.deadline = absl::Now() + options_.write_timeout;
}

bool Server::OnWritable(Connection& c) {
  const absl::string_view shared =
      c.shared_body ? absl::string_view(*c.shared_body) : absl::string_view();
  const absl::string_view pieces[] = {c.head, shared, c.body};
  const size_t total = c.head.size() + shared.size() + c.body.size();
  while (c.sent < total) {
    iovec iov[3];
    int count = 0;
    size_t offset = c.sent;
    for (absl::string_view piece : pieces) {
      if (offset >= piece.size()) {
        offset -= piece.size();
        continue;
      }
      iov[count++] = {.iov_base = const_cast<char*>(piece.data() + offset),
                      .iov_len = piece.size() - offset};
      offset = 0;
    }
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = static_cast<size_t>(count);
    const ssize_t n = sendmsg(c.fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  shutdown(c.fd, SHUT_WR);
  c.head.clear();
  c.head.shrink_to_fit();
  c.shared_body.reset();
  c.body.clear();
  c.body.shrink_to_fit();
  c.state = Connection::State::kDraining;
  c.deadline = absl::Now() + kLinger;
  return true;
}

}  // namespace gpuop::http
