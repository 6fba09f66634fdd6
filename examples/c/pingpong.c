/*
 * pingpong: round trips of 64-byte messages over two single-publisher
 * buses, for latency.
 *
 *   pingpong serve PING PONG            echo every message of PING on PONG
 *   pingpong client PING PONG ROUNDS    ROUNDS timed round trips (after
 *                                       ROUNDS/10 untimed ones, at least
 *                                       100), then stop the server
 *
 * Both buses exist already (shmbus create --msg-size 64 --slots 64
 * NAME), fresh: each side attaches as the publisher of the bus it writes
 * and reads the other from its oldest message, busy-spinning, in place
 * (shmbus_subscriber_recv_borrow: no copy beyond the ring's own). Every
 * receiver reads every byte: the server checks the pattern the client
 * wrote, the client compares the echo with what it sent. The client
 * prints one line:
 *
 *   c rounds=N p50_ns=.. p99_ns=.. p999_ns=.. max_ns=..
 *
 * crates/shmbus-ffi/examples/pingpong.rs is the same program in Rust.
 * Exit 0; 1 on an error; 2 if the peer stays silent for 10 s.
 */
#define _POSIX_C_SOURCE 200809L
#include <shmbus.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MSG 64
#define STOP UINT64_MAX
#define SILENCE_NS (10LL * 1000 * 1000 * 1000)

static void usage(void) {
    fputs("usage: pingpong serve PING PONG | pingpong client PING PONG ROUNDS\n", stderr);
    exit(1);
}

static void die(const char *what) {
    /* The message says what went wrong; the code is what a program would
     * switch on (SHMBUS_E_NOT_FOUND: start the server first, ...). */
    fprintf(stderr, "pingpong: %s: %s (%s)\n", what, shmbus_error_message(),
            shmbus_error_code_name(shmbus_error_code()));
    exit(1);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Message `seq`: the sequence in the first 8 bytes, then a pattern of it. */
static void fill(unsigned char *msg, uint64_t seq) {
    memcpy(msg, &seq, 8);
    for (int i = 8; i < MSG; i++) msg[i] = (unsigned char)(seq + (uint64_t)i);
}

static int check(const unsigned char *msg, uint64_t *seq) {
    memcpy(seq, msg, 8);
    if (*seq == STOP) return 0;
    unsigned char bad = 0;
    for (int i = 8; i < MSG; i++) bad |= (unsigned char)(msg[i] ^ (unsigned char)(*seq + (uint64_t)i));
    return bad ? -1 : 0;
}

/* The next message of `sub`, borrowed: the subscriber's own copy, valid
 * until the next call on it (lags are errors: nothing is lost with one
 * message in flight). */
static const unsigned char *recv_one(shmbus_subscriber_t *sub) {
    for (;;) {
        const void *msg = NULL;
        size_t len = 0;
        uint64_t skipped = 0;
        shmbus_status_t st = shmbus_subscriber_recv_borrow(sub, &msg, &len, &skipped, SILENCE_NS);
        if (st == SHMBUS_MESSAGE) return msg;
        if (st == SHMBUS_TIMED_OUT) {
            fputs("pingpong: no message for 10 s\n", stderr);
            exit(2);
        }
        if (st == SHMBUS_LAGGED) {
            fprintf(stderr, "pingpong: lagged by %" PRIu64 "\n", skipped);
            exit(1);
        }
        die("receive");
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t pct(const uint64_t *sorted, size_t n, double q) {
    size_t i = (size_t)(q * (double)n);
    return sorted[i < n ? i : n - 1];
}

int main(int argc, char **argv) {
    if (argc < 4) usage();
    int client = strcmp(argv[1], "client") == 0;
    if (!client && strcmp(argv[1], "serve") != 0) usage();
    if (client != (argc == 5) || argc > 5) usage();
    const char *ping = argv[2], *pong = argv[3];

    shmbus_open_options_t opts = shmbus_open_options_default();
    opts.start = SHMBUS_START_OLDEST;
    opts.wait = SHMBUS_WAIT_BUSY_SPIN;
    shmbus_publisher_t *pub = NULL;
    shmbus_subscriber_t *sub = NULL;
    if (shmbus_publisher_attach(client ? ping : pong, &opts, &pub) != SHMBUS_OK) die("attach");
    if (shmbus_subscriber_open(client ? pong : ping, &opts, &sub) != SHMBUS_OK) die("open");
    size_t msg_size = 0;
    if (shmbus_subscriber_msg_size(sub, &msg_size) != SHMBUS_OK) die("msg_size");
    if (msg_size != MSG) {
        fprintf(stderr, "pingpong: the buses carry %zu-byte messages, expected %d\n", msg_size, MSG);
        return 1;
    }

    unsigned char msg[MSG];
    if (!client) {
        for (;;) {
            uint64_t seq;
            const unsigned char *ping_msg = recv_one(sub);
            if (check(ping_msg, &seq) != 0) {
                fprintf(stderr, "pingpong: message %" PRIu64 " is corrupt\n", seq);
                return 1;
            }
            if (seq == STOP) break;
            if (shmbus_publisher_publish(pub, ping_msg, MSG, NULL) != SHMBUS_OK) die("publish");
        }
    } else {
        char *end;
        long long rounds = strtoll(argv[4], &end, 10);
        if (*end != '\0' || rounds <= 0) usage();
        uint64_t warmup = (uint64_t)rounds / 10 < 100 ? 100 : (uint64_t)rounds / 10;
        uint64_t *rtt = malloc((size_t)rounds * sizeof *rtt);
        if (!rtt) die("malloc");
        for (uint64_t i = 0; i < warmup + (uint64_t)rounds; i++) {
            fill(msg, i);
            uint64_t t0 = now_ns();
            if (shmbus_publisher_publish(pub, msg, MSG, NULL) != SHMBUS_OK) die("publish");
            const unsigned char *back = recv_one(sub);
            uint64_t t1 = now_ns();
            if (memcmp(msg, back, MSG) != 0) {
                fprintf(stderr, "pingpong: echo %" PRIu64 " differs from the ping\n", i);
                return 1;
            }
            if (i >= warmup) rtt[i - warmup] = t1 - t0;
        }
        memset(msg, 0xff, MSG);
        if (shmbus_publisher_publish(pub, msg, MSG, NULL) != SHMBUS_OK) die("publish");
        qsort(rtt, (size_t)rounds, sizeof *rtt, cmp_u64);
        size_t n = (size_t)rounds;
        printf("c rounds=%lld p50_ns=%" PRIu64 " p99_ns=%" PRIu64 " p999_ns=%" PRIu64
               " max_ns=%" PRIu64 "\n",
               rounds, pct(rtt, n, 0.50), pct(rtt, n, 0.99), pct(rtt, n, 0.999), rtt[n - 1]);
        free(rtt);
    }
    shmbus_subscriber_close(sub);
    shmbus_publisher_close(pub);
    return 0;
}
