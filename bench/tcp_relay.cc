// infertel-tcp-relay: the least a proxy can do, as a floor for bench/run.sh's latency figures.
//
//   infertel-tcp-relay --listen 127.0.0.1:PORT --to 127.0.0.1:UPSTREAM [--busy]
//
// Every accepted connection gets its own connection to the upstream, and bytes are copied both
// ways as they come: one epoll_wait, one read and one write per piece, on one thread. No HTTP is
// parsed, nothing is buffered, nothing is observed. What it adds to a request or to an SSE event
// is what the loopback hop and one proxy's wake-up cost on this machine before any proxy work:
// when that alone is above a bound, no proxy meets the bound here (docs/performance.md).
// --busy polls (epoll_wait with a zero timeout) instead of sleeping: it burns its core, and
// tells how much of what it adds is the wake-up of a sleeping process rather than the hop.
//
// A bench tool, not a product: writes block until the peer takes the bytes (the load generator
// always reads), and it prints "listening on http://127.0.0.1:PORT" once ready. Raw epoll rather
// than Asio, so that the floor is the system calls and nothing else.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// One direction's source: its socket and the socket its bytes go to.
struct End {
  int fd = -1;
  End* peer = nullptr;
};

bool ParseHostPort(const char* s, sockaddr_in* out) {
  std::string text(s);
  auto colon = text.rfind(':');
  if (colon == std::string::npos) return false;
  std::memset(out, 0, sizeof(*out));
  out->sin_family = AF_INET;
  out->sin_port = htons(static_cast<std::uint16_t>(std::atoi(text.c_str() + colon + 1)));
  return inet_pton(AF_INET, text.substr(0, colon).c_str(), &out->sin_addr) == 1;
}

void NoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Closes both ends of a pair once either side is done; epoll forgets a closed descriptor.
void ClosePair(End* e) {
  End* p = e->peer;
  close(e->fd);
  close(p->fd);
  delete e;
  delete p;
}

int Usage() {
  std::fprintf(stderr, "usage: infertel-tcp-relay --listen HOST:PORT --to HOST:PORT [--busy]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  sockaddr_in listen_addr{}, to_addr{};
  bool have_listen = false, have_to = false, busy = false;
  for (int i = 1; i < argc; ++i) {
    const bool value = i + 1 < argc;
    if (std::strcmp(argv[i], "--busy") == 0)
      busy = true;
    else if (std::strcmp(argv[i], "--listen") == 0 && value)
      have_listen = ParseHostPort(argv[++i], &listen_addr);
    else if (std::strcmp(argv[i], "--to") == 0 && value)
      have_to = ParseHostPort(argv[++i], &to_addr);
    else
      return Usage();
  }
  if (!have_listen || !have_to) return Usage();

  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(lfd, reinterpret_cast<sockaddr*>(&listen_addr), sizeof(listen_addr)) != 0 ||
      listen(lfd, 1024) != 0) {
    std::perror("infertel-tcp-relay: listen");
    return 1;
  }
  socklen_t len = sizeof(listen_addr);
  getsockname(lfd, reinterpret_cast<sockaddr*>(&listen_addr), &len);
  std::printf("infertel-tcp-relay: listening on http://127.0.0.1:%u\n",
              ntohs(listen_addr.sin_port));
  std::fflush(stdout);

  int ep = epoll_create1(0);
  // Two markers that are not connections: the listener, and an event of a pair closed earlier
  // in the same batch.
  static End listener, gone;
  epoll_event lev{};
  lev.events = EPOLLIN;
  lev.data.ptr = &listener;
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);

  static char buf[1 << 16];
  epoll_event events[64];
  for (;;) {
    int n = epoll_wait(ep, events, 64, busy ? 0 : -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::perror("infertel-tcp-relay: epoll_wait");
      return 1;
    }
    for (int i = 0; i < n; ++i) {
      auto* e = static_cast<End*>(events[i].data.ptr);
      if (e == &gone) continue;
      if (e == &listener) {
        int cfd = accept(lfd, nullptr, nullptr);
        if (cfd < 0) continue;
        int ufd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(ufd, reinterpret_cast<sockaddr*>(&to_addr), sizeof(to_addr)) != 0) {
          close(cfd);
          close(ufd);
          continue;
        }
        NoDelay(cfd);
        NoDelay(ufd);
        auto* c = new End{cfd, nullptr};
        auto* u = new End{ufd, c};
        c->peer = u;
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.ptr = c;
        epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &ev);
        ev.data.ptr = u;
        epoll_ctl(ep, EPOLL_CTL_ADD, ufd, &ev);
        continue;
      }
      ssize_t got = read(e->fd, buf, sizeof(buf));
      if (got <= 0) {
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        // Events for the other end of this pair later in this batch would name freed memory:
        // forget them first.
        for (int j = i + 1; j < n; ++j)
          if (events[j].data.ptr == e->peer) events[j].data.ptr = &gone;
        ClosePair(e);
        continue;
      }
      for (ssize_t off = 0; off < got;) {
        ssize_t w = write(e->peer->fd, buf + off, static_cast<std::size_t>(got - off));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;  // the peer is gone; its read side sees it next
        off += w;
      }
    }
  }
}
