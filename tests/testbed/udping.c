/* toposcope testbed — a small UDP ping for measuring the emulated fabric.
 *
 *   toposcope-udping server [--port P] [--timeout SEC]
 *   toposcope-udping client HOST [--port P] [-c COUNT] [-i INTERVAL_US] [--wait-ms MS] [--warmup N]
 *
 * The server echoes every datagram until its timeout (always bounded, so a test that dies never
 * leaves it behind for long). The client sends COUNT probes one at a time, each carrying a
 * sequence number, and prints one line:
 *   sent N received M lost K min_us A median_us B mean_us C p90_us D max_us E est_us F
 * est_us is the probe engine's own estimate of a pair's round trip (ts_sampler: the mean of the
 * samples below median + 5 scaled MADs, lib/probe/probe.c) over the first 256 replies, so a round trip
 * measured here and one the agents measure are the same statistic.
 * The first --warmup replies are not counted: they pay for ARP resolution through the fabric.
 *
 *   toposcope-udping sink [--port P] [--timeout SEC]
 *   toposcope-udping stream HOST [--port P] [--seconds SEC]
 * measure a link's rate instead: stream sends bulk TCP to a sink for SEC seconds and prints
 *   bytes N seconds T mbps R
 * with T running until the sink has read the last byte and closed (so R is what arrived, not
 * what sat in socket buffers). The sink serves one stream at a time until its timeout. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "toposcope/probe.h"

#define PROBE_MAGIC 0x75647067u   /* "udpg" */

typedef struct probe {
    uint32_t magic;
    uint32_t seq;
    uint64_t sent_ns;
} probe;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void usage(void)
{
    fprintf(stderr, "usage: toposcope-udping server [--port P] [--timeout SEC]\n"
                    "       toposcope-udping client HOST [--port P] [-c COUNT] [-i INTERVAL_US]"
                    " [--wait-ms MS] [--warmup N]\n"
                    "       toposcope-udping sink [--port P] [--timeout SEC]\n"
                    "       toposcope-udping stream HOST [--port P] [--seconds SEC]\n");
}

/* A socket of TYPE connected to HOST:PORT, with send and receive timeouts when timeout_s > 0.
 * Returns the descriptor, -2 when HOST does not resolve, -1 on any other failure (said why). */
static int connect_to(const char *host, int port, int type, double timeout_s)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = type}, *ai;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    int rc = getaddrinfo(host, portstr, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "toposcope-udping: %s: %s\n", host, gai_strerror(rc));
        return -2;
    }
    int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
    struct timeval tv = {.tv_sec = (time_t)timeout_s, .tv_usec = 0};
    if (fd < 0 || (timeout_s > 0 && (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0 ||
                                     setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)) ||
        connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        fprintf(stderr, "toposcope-udping: connect %s: %s\n", host, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    return fd;
}

/* ---- TCP rate: sink and stream ---- */

static int sink(int port, double timeout_s)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 8) < 0) {
        fprintf(stderr, "toposcope-udping: sink on port %d: %s\n", port, strerror(errno));
        return 1;
    }
    uint64_t end = now_ns() + (uint64_t)(timeout_s * 1e9);
    static char buf[1 << 16];
    for (uint64_t t = now_ns(); t < end; t = now_ns()) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, (int)((end - t) / 1000000u) + 1) <= 0)
            continue;
        int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        /* bounded by the sink's own timeout, whatever the peer does */
        for (uint64_t u = now_ns(); u < end; u = now_ns()) {
            struct pollfd cp = {.fd = c, .events = POLLIN};
            if (poll(&cp, 1, (int)((end - u) / 1000000u) + 1) <= 0)
                continue;
            if (read(c, buf, sizeof buf) <= 0)
                break;
        }
        close(c);
    }
    close(fd);
    return 0;
}

static int stream(const char *host, int port, double seconds)
{
    int fd = connect_to(host, port, SOCK_STREAM, seconds + 30);
    if (fd < 0)
        return fd == -2 ? 2 : 1;
    static char buf[1 << 16];
    memset(buf, 0x5a, sizeof buf);
    uint64_t start = now_ns(), stop = start + (uint64_t)(seconds * 1e9), bytes = 0;
    while (now_ns() < stop) {
        ssize_t n = write(fd, buf, sizeof buf);
        if (n <= 0) {
            fprintf(stderr, "toposcope-udping: stream to %s: %s\n", host, strerror(errno));
            close(fd);
            return 1;
        }
        bytes += (uint64_t)n;
    }
    /* what the socket buffers still hold counts only once the sink has read it and closed */
    shutdown(fd, SHUT_WR);
    char c;
    while (read(fd, &c, 1) > 0) {
    }
    double t = (double)(now_ns() - start) / 1e9;
    close(fd);
    printf("bytes %" PRIu64 " seconds %.3f mbps %.2f\n", bytes, t, (double)bytes * 8 / t / 1e6);
    return 0;
}

static int server(int port, double timeout_s)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_ANY)};
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        fprintf(stderr, "toposcope-udping: bind port %d: %s\n", port, strerror(errno));
        return 1;
    }
    uint64_t end = now_ns() + (uint64_t)(timeout_s * 1e9);
    unsigned char buf[2048];
    for (;;) {
        uint64_t t = now_ns();
        if (t >= end)
            return 0;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int ms = (int)((end - t) / 1000000u) + 1;
        if (poll(&pfd, 1, ms) <= 0)
            continue;
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
        if (n > 0)
            sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, fl);
    }
}

static int client(const char *host, int port, int count, double interval_us, int wait_ms, int warmup)
{
    int fd = connect_to(host, port, SOCK_DGRAM, 0);
    if (fd < 0)
        return fd == -2 ? 2 : 1;
    double *rtt = calloc((size_t)count, sizeof *rtt);
    if (!rtt)
        return 1;
    int received = 0, sent = 0;
    for (int i = 0; i < count + warmup; i++) {
        probe p = {.magic = PROBE_MAGIC, .seq = (uint32_t)i, .sent_ns = now_ns()};
        if (send(fd, &p, sizeof p, 0) != (ssize_t)sizeof p) {
            /* ICMP unreachable from an earlier probe surfaces here; count it as lost */
        }
        if (i >= warmup)
            sent++;
        uint64_t deadline = p.sent_ns + (uint64_t)wait_ms * 1000000u;
        for (;;) {
            uint64_t t = now_ns();
            if (t >= deadline)
                break;
            struct timespec ts = {.tv_sec = (time_t)((deadline - t) / 1000000000u),
                                  .tv_nsec = (long)((deadline - t) % 1000000000u)};
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            if (ppoll(&pfd, 1, &ts, NULL) <= 0)
                continue;
            probe r;
            ssize_t n = recv(fd, &r, sizeof r, 0);
            uint64_t got = now_ns();
            /* a late reply to an earlier probe is not this probe's answer */
            if (n == (ssize_t)sizeof r && r.magic == PROBE_MAGIC && r.seq == p.seq) {
                if (i >= warmup)
                    rtt[received++] = (double)(got - r.sent_ns) / 1000.0;
                break;
            }
        }
        uint64_t next = p.sent_ns + (uint64_t)(interval_us * 1000.0);
        uint64_t t = now_ns();
        if (next > t) {
            struct timespec ts = {.tv_sec = (time_t)((next - t) / 1000000000u),
                                  .tv_nsec = (long)((next - t) % 1000000000u)};
            nanosleep(&ts, NULL);
        }
    }
    close(fd);
    if (received == 0) {
        printf("sent %d received 0 lost %d\n", sent, sent);
        free(rtt);
        return 1;
    }
    double sum = 0;
    ts_stop_rule rule;
    ts_stop_rule_default(&rule);
    ts_sampler sampler;
    ts_sampler_start(&sampler, &rule);
    for (int i = 0; i < received; i++) {
        sum += rtt[i];
        ts_sampler_add(&sampler, rtt[i]);
    }
    ts_pair_stats st;
    ts_sampler_finish(&sampler, 0, 1, &st);
    qsort(rtt, (size_t)received, sizeof *rtt, cmp_double);
    double median = received % 2 ? rtt[received / 2] : (rtt[received / 2 - 1] + rtt[received / 2]) / 2;
    printf("sent %d received %d lost %d min_us %.1f median_us %.1f mean_us %.1f p90_us %.1f max_us %.1f "
           "est_us %.1f\n", sent, received, sent - received, rtt[0], median, sum / received,
           rtt[(int)((received - 1) * 0.9)], rtt[received - 1], st.est_us);
    free(rtt);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage();
        return 2;
    }
    const char *mode = argv[1];
    int port = 7979, count = 50, wait_ms = 200, warmup = 2;
    double interval_us = 2000, timeout_s = 60, seconds = 5;
    static const struct option opts[] = {
        {"port", required_argument, 0, 'p'},   {"count", required_argument, 0, 'c'},
        {"interval-us", required_argument, 0, 'i'}, {"wait-ms", required_argument, 0, 'w'},
        {"warmup", required_argument, 0, 'W'}, {"timeout", required_argument, 0, 't'},
        {"seconds", required_argument, 0, 's'}, {0, 0, 0, 0}};
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "p:c:i:w:t:", opts, NULL)) != -1) {
        switch (c) {
        case 'p': port = atoi(optarg); break;
        case 'c': count = atoi(optarg); break;
        case 'i': interval_us = strtod(optarg, NULL); break;
        case 'w': wait_ms = atoi(optarg); break;
        case 'W': warmup = atoi(optarg); break;
        case 't': timeout_s = strtod(optarg, NULL); break;
        case 's': seconds = strtod(optarg, NULL); break;
        default: usage(); return 2;
        }
    }
    if (port <= 0 || port > 65535 || count <= 0 || count > 10000000 || wait_ms <= 0 ||
        warmup < 0 || !(interval_us >= 0) || !(timeout_s > 0) || !(seconds > 0 && seconds < 3600)) {
        usage();
        return 2;
    }
    /* default 50 us slack would blur the waits between probes */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (strcmp(mode, "server") == 0 && optind == argc)
        return server(port, timeout_s);
    if (strcmp(mode, "client") == 0 && optind == argc - 1)
        return client(argv[optind], port, count, interval_us, wait_ms, warmup);
    if (strcmp(mode, "sink") == 0 && optind == argc)
        return sink(port, timeout_s);
    if (strcmp(mode, "stream") == 0 && optind == argc - 1)
        return stream(argv[optind], port, seconds);
    usage();
    return 2;
}
