/* The echo load generator's hot path: N TCP connections on one epoll, every byte verified.
 *
 * Built and driven by workloads/echo/native_load.py (compiled on first use with the machine's
 * `cc`, cached outside the source tree); a person never needs to run it by hand. Why C: on
 * loopback the client pays the kernel's TCP work too, so a Python client costs about what the
 * fastest Python server costs per request and saturates first; this one costs a few µs.
 *
 * Two ways to offer load:
 *   closed loop (default): each connection sends a message, reads its whole echo, verifies it,
 *     sends the next at once: the server's maximum throughput at N connections;
 *   --rate R (open loop, as wrk2 does): R requests per second spread evenly over the
 *     connections; connection i's k-th request is *scheduled* at (i + k*N)/R seconds after the
 *     start and its latency runs from that scheduled time, so a server that falls behind shows
 *     its queueing in the latency instead of hiding it by slowing the sender down.
 *
 * Messages: connection i's k-th message is `size` bytes of a seeded pseudo-random buffer from
 * offset (k*31 + i*7) % 256, so a stale, misrouted or shifted echo cannot pass. --minimal is
 * the comparison client: same loop, no verification, no clock, no histogram (what a bare
 * ping-pong client costs, the yardstick for this one's overhead).
 *
 * Protocol with the wrapper (stdout, one record per line): after connecting, and after one
 * byte has gone each way on every connection (so the server has accepted and is watching each
 * one: its accept work stays out of the measured window), "ready"; then it waits for a line on
 * stdin (so several processes and the server's CPU sample start together); after the load,
 * "key value" lines and "h <µs> <count>" histogram lines, then "end"; then it waits for a
 * second line (or the end of stdin) before it closes its connections, so the wrapper reads
 * the server's CPU before the server's teardown work begins.
 * Exit status: 0 when the load ran (errors are counted in the record), 2 on bad arguments.
 *
 * --tls (only in the build with -DLOADGEN_TLS, linked with -lssl -lcrypto): each connection
 * does its TLS handshake, blocking, right after connecting, so handshakes stay out of the
 * measured window; then the same nonblocking loop runs through SSL_read/SSL_write, waiting on
 * epoll for whichever direction OpenSSL asks for (SSL_ERROR_WANT_READ/WANT_WRITE). The server's
 * certificate is not verified: the echo server makes a self-signed one at start.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#ifdef LOADGEN_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>
#endif

#define OFFSETS 256
#define READ_MAX 65536
#define LOW_US (1u << 20)  /* exact µs buckets below ~1.05 s ... */
#define HIGH_MS 600000u    /* ... then ms buckets up to 600 s */

typedef struct {
    int fd;
    int index;           /* global connection index (names the connection in errors) */
    int in_flight;       /* a message is out and its echo is not complete */
    int done;            /* finished, cleanly or with an error (closed at once only on error) */
    int want_out;        /* EPOLLOUT is registered (a partial write is pending) */
    uint64_t seq;        /* messages sent so far */
    int offset;          /* where the current message starts in the payload */
    size_t sent, received;
    int64_t started_ns;  /* scheduled (paced) or actual (closed) send time of the current one */
    int64_t sent_ns;     /* when it actually went out (the --timeout counts from here) */
    int64_t next_ns;     /* paced: the scheduled time of the next message */
    int heap_pos;        /* paced: position in the timer heap, -1 when not waiting there */
#ifdef LOADGEN_TLS
    SSL *ssl;            /* --tls: this connection's session (NULL in plain TCP) */
#endif
} conn_t;

static struct {
    const char *host;
    int port, connections, first, stride, total, minimal, tls;
    size_t size;
    double duration, timeout, rate;
    uint64_t seed;
} cfg = {"127.0.0.1", 0, 0, 0, 1, 0, 0, 0, 0, 0, 10.0, 0.0, 1};

static unsigned char *payload;
static conn_t *conns;
static int epfd;
static uint64_t requests, corrupt, missing, failed, scheduled;
static char first_error[256];
static uint32_t *low_counts, *high_counts;
static int64_t start_ns, deadline_ns;
static int64_t loop_now; /* the clock as this loop iteration began (--minimal reads no other) */
static int active;

/* The two calls that move bytes, plain or through TLS. Each returns what send()/recv() would:
 * bytes moved, 0 at EOF, or -1 with errno set (EAGAIN when the socket must be waited on;
 * under TLS, `*want_out` says that OpenSSL waits to write, whatever the call was). */
#ifdef LOADGEN_TLS
static SSL_CTX *tls_ctx;

static ssize_t tls_result(conn_t *c, int n, int *want_out) {
    if (n > 0) return n;
    int err = SSL_get_error(c->ssl, n);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        if (want_out) *want_out = err == SSL_ERROR_WANT_WRITE;
        errno = EAGAIN;
        return -1;
    }
    if (err == SSL_ERROR_ZERO_RETURN) return 0;
    if (err == SSL_ERROR_SYSCALL && errno == 0) return 0; /* EOF without close_notify */
    if (err != SSL_ERROR_SYSCALL) errno = EPROTO;
    ERR_clear_error();
    return -1;
}
#endif

static ssize_t send_bytes(conn_t *c, const void *buf, size_t len, int *want_out) {
#ifdef LOADGEN_TLS
    if (c->ssl) {
        ERR_clear_error();
        return tls_result(c, SSL_write(c->ssl, buf, (int)len), want_out);
    }
#endif
    if (want_out) *want_out = 1;
    return send(c->fd, buf, len, MSG_NOSIGNAL);
}

static ssize_t recv_bytes(conn_t *c, void *buf, size_t len, int *want_out) {
#ifdef LOADGEN_TLS
    if (c->ssl) {
        ERR_clear_error();
        return tls_result(c, SSL_read(c->ssl, buf, (int)len), want_out);
    }
#endif
    if (want_out) *want_out = 0;
    return recv(c->fd, buf, len, 0);
}

/* Bytes OpenSSL has decrypted and holds beyond what the last read took (epoll cannot see them). */
static int pending(conn_t *c) {
#ifdef LOADGEN_TLS
    if (c->ssl) return SSL_pending(c->ssl);
#endif
    (void)c;
    return 0;
}

static conn_t **heap; /* paced: idle connections by next_ns */
static int heap_len;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void record_latency(int64_t ns) {
    uint64_t us = ns <= 1000 ? 1 : (uint64_t)(ns / 1000);
    if (us < LOW_US) {
        low_counts[us]++;
    } else {
        uint64_t ms = us / 1000;
        high_counts[ms < HIGH_MS ? ms : HIGH_MS - 1]++;
    }
}

static void heap_swap(int a, int b) {
    conn_t *t = heap[a];
    heap[a] = heap[b];
    heap[b] = t;
    heap[a]->heap_pos = a;
    heap[b]->heap_pos = b;
}

static void heap_push(conn_t *c) {
    int i = heap_len++;
    heap[i] = c;
    c->heap_pos = i;
    while (i > 0 && heap[(i - 1) / 2]->next_ns > heap[i]->next_ns) {
        heap_swap(i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static conn_t *heap_pop(void) {
    conn_t *top = heap[0];
    heap_len--;
    top->heap_pos = -1;
    if (heap_len > 0) {
        heap[0] = heap[heap_len];
        heap[0]->heap_pos = 0;
        int i = 0;
        for (;;) {
            int l = 2 * i + 1, r = l + 1, m = i;
            if (l < heap_len && heap[l]->next_ns < heap[m]->next_ns) m = l;
            if (r < heap_len && heap[r]->next_ns < heap[m]->next_ns) m = r;
            if (m == i) break;
            heap_swap(i, m);
            i = m;
        }
    }
    return top;
}

static void heap_remove(conn_t *c) {
    /* Rare (a connection that fails while waiting): re-heapify by pushing the rest again. */
    if (c->heap_pos < 0) return;
    int n = heap_len;
    conn_t **rest = malloc(sizeof(conn_t *) * (size_t)n);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (heap[i] != c) rest[k++] = heap[i];
    heap_len = 0;
    c->heap_pos = -1;
    for (int i = 0; i < k; i++) heap_push(rest[i]);
    free(rest);
}

/* A connection's load is over. It stays open until the wrapper says (see the protocol). */
static void finish(conn_t *c) {
    if (c->done) return;
    c->done = 1;
    active--;
    heap_remove(c);
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
}

static void close_now(conn_t *c) {
#ifdef LOADGEN_TLS
    if (c->ssl) SSL_free(c->ssl);
    c->ssl = NULL;
#endif
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
}

__attribute__((format(printf, 3, 4)))
static void fail(conn_t *c, uint64_t *kind, const char *fmt, ...) {
    if (c->done) return;
    (*kind)++;
    if (!first_error[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(first_error, sizeof first_error, fmt, ap);
        va_end(ap);
    }
    /* An abort, as the Python generator does: RST, nothing lingers. */
    struct linger lg = {1, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    finish(c);
    close_now(c);
}

static void set_out(conn_t *c, int want) {
    if (c->want_out == want) return;
    struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = want;
}

static void write_some(conn_t *c) {
    while (c->sent < cfg.size) {
        int want_out = 1;
        ssize_t n = send_bytes(c, payload + c->offset + c->sent, cfg.size - c->sent, &want_out);
        if (n > 0) {
            c->sent += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            set_out(c, want_out); /* TLS may wait to read first: EPOLLIN retries the write */
            return;
        } else {
            fail(c, &missing, "connection %d: lost while sending (%s)", c->index, strerror(errno));
            return;
        }
    }
    set_out(c, 0);
}

/* Send message number c->seq; `at` is when it counts from (its scheduled time if paced). */
static void send_message(conn_t *c, int64_t at) {
    c->offset = (int)((c->seq * 31 + (uint64_t)c->index * 7) % OFFSETS);
    c->seq++;
    c->sent = c->received = 0;
    c->in_flight = 1;
    c->started_ns = at;
    c->sent_ns = cfg.rate > 0 ? now_ns() : at;
    write_some(c);
}

/* The slot of connection c's k-th message, in ns after the start (paced). */
static int64_t slot_ns(const conn_t *c, uint64_t k) {
    double seconds = ((double)c->index + (double)k * cfg.total) / cfg.rate;
    return start_ns + (int64_t)(seconds * 1e9);
}

/* Between messages: closed loop sends at once, paced waits for the next slot. */
static void next_message(conn_t *c, int64_t now) {
    if (cfg.rate > 0) {
        c->next_ns = slot_ns(c, c->seq);
        /* Nothing goes out after the window, not even slots it fell behind on. */
        if (c->next_ns >= deadline_ns || now >= deadline_ns) return finish(c);
        if (c->next_ns <= now) return send_message(c, c->next_ns);
        heap_push(c);
        return;
    }
    if (now >= deadline_ns) return finish(c);
    send_message(c, now);
}

static unsigned char readbuf[READ_MAX];

static void read_once(conn_t *c) {
    int want_out = 0;
    ssize_t n = recv_bytes(c, readbuf, READ_MAX, &want_out);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            if (want_out) set_out(c, 1);
            return;
        }
        if (c->in_flight)
            fail(c, &missing, "connection %d: lost with the echo incomplete (%s)", c->index,
                 strerror(errno));
        else
            fail(c, &failed, "connection %d: lost (%s)", c->index, strerror(errno));
        return;
    }
    if (n == 0) {
        if (c->in_flight)
            fail(c, &missing, "connection %d: EOF with the echo incomplete", c->index);
        else
            fail(c, &failed, "connection %d: lost (closed by the server)", c->index);
        return;
    }
    if (!c->in_flight || c->received + (size_t)n > cfg.size) {
        fail(c, &corrupt, "connection %d: %zd bytes too many", c->index, n);
        return;
    }
    if (!cfg.minimal && memcmp(readbuf, payload + c->offset + c->received, (size_t)n) != 0) {
        fail(c, &corrupt, "connection %d: echo differs from what it sent", c->index);
        return;
    }
    c->received += (size_t)n;
    if (c->received < cfg.size) return;
    c->in_flight = 0;
    requests++;
    if (cfg.minimal) return next_message(c, loop_now);
    int64_t now = now_ns();
    record_latency(now - c->started_ns);
    next_message(c, now);
}

/* Plain TCP reads once (epoll is level-triggered: what is left wakes it again); TLS reads on
 * while OpenSSL holds decrypted bytes epoll cannot see. */
static void readable(conn_t *c) {
    do {
        read_once(c);
    } while (!c->done && pending(c) > 0);
}

static int wait_events(struct epoll_event *events, int max, int64_t until_ns) {
    /* epoll_pwait2 takes a timeout in ns: a paced send is not rounded to the next ms. */
    static int have_pwait2 = 1;
    int64_t left = until_ns - now_ns();
    if (left < 0) left = 0;
#ifdef SYS_epoll_pwait2
    if (have_pwait2) {
        struct timespec ts = {left / 1000000000, left % 1000000000};
        long n = syscall(SYS_epoll_pwait2, epfd, events, max, &ts, NULL, 0);
        if (n >= 0 || errno != ENOSYS) return (int)n;
        have_pwait2 = 0;
    }
#endif
    /* Older kernels: whole ms, and a non-blocking poll for the last one (costs a spin). */
    return epoll_wait(epfd, events, max, (int)(left / 1000000));
}

static void timeout_check(int64_t now, int64_t limit_ns) {
    for (int i = 0; i < cfg.connections; i++) {
        conn_t *c = &conns[i];
        if (!c->done && c->in_flight && now - c->sent_ns > limit_ns)
            fail(c, &missing, "connection %d: no full echo within %g s", c->index, cfg.timeout);
    }
}

static int connect_all(void) {
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cfg.port)};
    if (inet_pton(AF_INET, cfg.host, &addr.sin_addr) != 1) {
        fprintf(stderr, "loadgen: --host must be an IPv4 address, not %s\n", cfg.host);
        return -1;
    }
    for (int i = 0; i < cfg.connections; i++) {
        conn_t *c = &conns[i];
        c->index = cfg.first + i * cfg.stride;
        c->heap_pos = -1;
        c->fd = socket(AF_INET, SOCK_STREAM, 0);
        if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
            failed++;
            if (!first_error[0])
                snprintf(first_error, sizeof first_error, "connection %d: cannot connect: %s",
                         c->index, strerror(errno));
            close_now(c);
            c->done = 1;
            continue;
        }
        int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
#ifdef LOADGEN_TLS
        if (cfg.tls) { /* the handshake, blocking, before the window (the socket still blocks) */
            struct timeval tv = {(time_t)cfg.timeout, 0};
            setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            c->ssl = SSL_new(tls_ctx);
            if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1 || SSL_connect(c->ssl) != 1) {
                failed++;
                if (!first_error[0]) {
                    unsigned long e = ERR_get_error();
                    snprintf(first_error, sizeof first_error, "connection %d: TLS handshake "
                             "failed: %s", c->index, e ? ERR_reason_error_string(e) : "EOF");
                }
                ERR_clear_error();
                close_now(c);
                c->done = 1;
                continue;
            }
            struct timeval none = {0, 0};
            setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
        }
#endif
        fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
        active++;
    }
    return 0;
}

/* One byte each way on every connection, before the window: the server has accepted and is
 * watching every connection when the load starts. A connection that cannot echo it fails. */
static void prime_all(void) {
    int waiting = 0;
    for (int i = 0; i < cfg.connections; i++) {
        conn_t *c = &conns[i];
        if (c->done) continue;
        ssize_t n = send_bytes(c, payload, 1, NULL);
        if (n != 1) {
            fail(c, &failed, "connection %d: cannot send its first byte (%s)", c->index,
                 n < 0 ? strerror(errno) : "nothing sent");
            continue;
        }
        c->in_flight = 1;
        waiting++;
    }
    int64_t limit = now_ns() + (int64_t)(cfg.timeout * 1e9);
    struct epoll_event events[256];
    while (waiting > 0) {
        if (now_ns() >= limit) {
            for (int i = 0; i < cfg.connections; i++)
                if (!conns[i].done && conns[i].in_flight)
                    fail(&conns[i], &missing, "connection %d: no echo of its first byte within %g s",
                         conns[i].index, cfg.timeout);
            return;
        }
        int n = wait_events(events, 256, limit);
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("loadgen: epoll_wait");
            return;
        }
        for (int i = 0; i < n; i++) {
            conn_t *c = events[i].data.ptr;
            if (c->done || !c->in_flight) continue;
            ssize_t got = recv_bytes(c, readbuf, 2, NULL);
            if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
            waiting--;
            c->in_flight = 0;
            if (got == 1 && readbuf[0] == payload[0]) continue;
            if (got > 0)
                fail(c, &corrupt, "connection %d: wrong echo of its first byte", c->index);
            else /* its echo was due: the same fault as an echo cut short in the load */
                fail(c, &missing, "connection %d: %s before the echo of its first byte",
                     c->index, got == 0 ? "EOF" : strerror(errno));
        }
    }
}

static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int usage(const char *why) {
    fprintf(stderr,
            "loadgen: %s\nusage: loadgen --port P --connections N --size BYTES --duration S "
            "[--host IPV4] [--first I --stride K --total T] [--rate R] [--timeout S] [--seed N] "
            "[--minimal] [--tls]\n",
            why);
    return 2;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--minimal")) { cfg.minimal = 1; continue; }
        if (!strcmp(a, "--tls")) { cfg.tls = 1; continue; }
        if (i + 1 >= argc) return usage("an option is missing its value");
        const char *v = argv[++i];
        if (!strcmp(a, "--host")) cfg.host = v;
        else if (!strcmp(a, "--port")) cfg.port = atoi(v);
        else if (!strcmp(a, "--connections")) cfg.connections = atoi(v);
        else if (!strcmp(a, "--size")) cfg.size = (size_t)strtoull(v, NULL, 10);
        else if (!strcmp(a, "--duration")) cfg.duration = atof(v);
        else if (!strcmp(a, "--timeout")) cfg.timeout = atof(v);
        else if (!strcmp(a, "--rate")) cfg.rate = atof(v);
        else if (!strcmp(a, "--seed")) cfg.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--first")) cfg.first = atoi(v);
        else if (!strcmp(a, "--stride")) cfg.stride = atoi(v);
        else if (!strcmp(a, "--total")) cfg.total = atoi(v);
        else return usage("unknown option");
    }
    if (cfg.port <= 0 || cfg.port > 65535 || cfg.connections <= 0 || cfg.size == 0 ||
        cfg.duration <= 0 || cfg.timeout <= 0 || cfg.rate < 0 || cfg.stride <= 0)
        return usage("--port, --connections, --size, --duration and --timeout must be positive");
    if (cfg.total < cfg.first + (cfg.connections - 1) * cfg.stride + 1)
        cfg.total = cfg.first + (cfg.connections - 1) * cfg.stride + 1;
    if (cfg.minimal && cfg.rate > 0) return usage("--minimal is closed loop only");
#ifdef LOADGEN_TLS
    if (cfg.tls) {
        tls_ctx = SSL_CTX_new(TLS_client_method());
        if (!tls_ctx) return usage("--tls: OpenSSL could not make a client context");
        SSL_CTX_set_verify(tls_ctx, SSL_VERIFY_NONE, NULL); /* the server's cert is self-signed */
        SSL_CTX_set_mode(tls_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                      SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    }
#else
    if (cfg.tls) return usage("--tls: this build has no OpenSSL (built without -DLOADGEN_TLS)");
#endif

    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_TIMERSLACK, 1UL); /* wake paced sends on time, not up to 50 µs late */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    uint64_t state = cfg.seed;
    payload = malloc(cfg.size + OFFSETS + 8);
    for (size_t i = 0; i < cfg.size + OFFSETS; i += 8) {
        uint64_t r = splitmix64(&state);
        memcpy(payload + i, &r, 8);
    }
    conns = calloc((size_t)cfg.connections, sizeof(conn_t));
    heap = calloc((size_t)cfg.connections, sizeof(conn_t *));
    low_counts = calloc(LOW_US, sizeof(uint32_t));
    high_counts = calloc(HIGH_MS, sizeof(uint32_t));
    epfd = epoll_create1(0);
    if (!payload || !conns || !heap || !low_counts || !high_counts || epfd < 0) {
        fprintf(stderr, "loadgen: out of memory or no epoll\n");
        return 1;
    }
    if (connect_all() < 0) return 2;
    prime_all();
    printf("ready\n");
    fflush(stdout);
    char go[16];
    if (!fgets(go, sizeof go, stdin)) return 1; /* the wrapper went away */

    double cpu_start = cpu_seconds();
    start_ns = loop_now = now_ns();
    deadline_ns = start_ns + (int64_t)(cfg.duration * 1e9);
    int64_t limit_ns = (int64_t)(cfg.timeout * 1e9);
    for (int i = 0; i < cfg.connections; i++) {
        conn_t *c = &conns[i];
        if (c->done) continue;
        if (cfg.rate > 0)
            for (uint64_t k = 0; slot_ns(c, k) < deadline_ns; k++) scheduled++;
        next_message(c, start_ns);
    }

    struct epoll_event events[256];
    int64_t next_check = start_ns + 100000000;
    while (active > 0) {
        int64_t now = loop_now = now_ns();
        while (heap_len > 0 && heap[0]->next_ns <= now) {
            conn_t *c = heap_pop();
            if (now >= deadline_ns) /* woke up late, past the window: send nothing more */
                finish(c);
            else
                send_message(c, c->next_ns);
        }
        if (now >= next_check) {
            timeout_check(now, limit_ns);
            next_check = now + 100000000;
            if (now > deadline_ns + limit_ns) {
                timeout_check(now, 0); /* whatever is still out now is missing */
                break;
            }
        }
        int64_t until = next_check;
        if (heap_len > 0 && heap[0]->next_ns < until) until = heap[0]->next_ns;
        int n = wait_events(events, 256, until);
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("loadgen: epoll_wait");
            return 1;
        }
        for (int i = 0; i < n; i++) {
            conn_t *c = events[i].data.ptr;
            if (c->done) continue;
            /* a write TLS held back until it had read resumes on either event */
            if ((events[i].events & EPOLLOUT) || (c->in_flight && c->sent < cfg.size))
                write_some(c);
            if (!c->done && (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))) readable(c);
        }
    }
    double wall = (now_ns() - start_ns) / 1e9;
    double cpu = cpu_seconds() - cpu_start;

    printf("requests %llu\n", (unsigned long long)requests);
    printf("scheduled %llu\n", (unsigned long long)scheduled);
    printf("corrupt %llu\nmissing %llu\nfailed %llu\n", (unsigned long long)corrupt,
           (unsigned long long)missing, (unsigned long long)failed);
    printf("wall_s %.9f\ncpu_s %.6f\n", wall, cpu);
    printf("first_error %s\n", first_error);
    for (uint32_t us = 0; us < LOW_US; us++)
        if (low_counts[us]) printf("h %u %u\n", us, low_counts[us]);
    for (uint32_t ms = 0; ms < HIGH_MS; ms++)
        if (high_counts[ms]) printf("h %llu %u\n", (unsigned long long)ms * 1000, high_counts[ms]);
    printf("end\n");
    fflush(stdout);
    /* Close only once the wrapper has read the server's CPU (a line, or stdin's end). */
    if (!fgets(go, sizeof go, stdin)) go[0] = 0;
    for (int i = 0; i < cfg.connections; i++) {
#ifdef LOADGEN_TLS
        if (conns[i].ssl) SSL_shutdown(conns[i].ssl); /* close_notify, not waited for */
#endif
        close_now(&conns[i]);
    }
    return 0;
}
