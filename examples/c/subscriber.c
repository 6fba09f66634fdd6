/*
 * subscriber: prints each message of a bus as one line, like `shmbus sub`.
 *
 *   subscriber [--kind bus|journal|pool|stream] [--from oldest|next|latest]
 *              [--lossless] [--count N] [--timeout SECS] NAME
 *
 * bus (the default; any bus of fixed-size messages, one or many
 * publishers) opens a subscriber that starts where --from says (default
 * next); journal joins a journaled bus and starts with its journal (--from
 * does not apply); pool opens a pool bus's subscriber; stream becomes a
 * stream's consumer and reads each record in place (peek, then release:
 * no copy), carrying on where the last consumer stopped. Once open it writes
 * "ready" to stderr, then prints each message's bytes up to the first NUL
 * on stdout, one line each, and each lag as "lagged: skipped N" on stderr.
 * --lossless (a bus only) opens a lossless subscriber: the publisher does
 * not overwrite a message it has not read, unless it stalls past the bus's
 * eviction timeout; it writes "lossless pid PID" to stderr before "ready",
 * and "lossless: yes" (or "lossless: no" once evicted) when it ends.
 * Exit 0 after N messages (--count; lags do not count), 2 if no message
 * arrives for SECS seconds (--timeout), 1 on any error (one line on stderr).
 */
#define _POSIX_C_SOURCE 200809L
#include <shmbus.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum kind { KIND_BUS, KIND_JOURNAL, KIND_POOL, KIND_STREAM };

static void usage(void) {
    fputs("usage: subscriber [--kind bus|journal|pool|stream] [--from oldest|next|latest] "
          "[--lossless] [--count N] [--timeout SECS] NAME\n",
          stderr);
    exit(1);
}

/* One message as a line: its bytes up to the first NUL. */
static int print_line(const void *data, size_t len) {
    const char *nul = memchr(data, '\0', len);
    size_t n = nul ? (size_t)(nul - (const char *)data) : len;
    if (fwrite(data, 1, n, stdout) != n || putchar('\n') == EOF || fflush(stdout) != 0) {
        fprintf(stderr, "subscriber: writing stdout: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    enum kind kind = KIND_BUS;
    shmbus_open_options_t opts = shmbus_open_options_default();
    long long count = -1;
    double timeout = -1;
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--kind") == 0 && v) {
            i++;
            if (strcmp(v, "bus") == 0 || strcmp(v, "many") == 0) kind = KIND_BUS;
            else if (strcmp(v, "journal") == 0) kind = KIND_JOURNAL;
            else if (strcmp(v, "pool") == 0) kind = KIND_POOL;
            else if (strcmp(v, "stream") == 0) kind = KIND_STREAM;
            else usage();
        } else if (strcmp(a, "--from") == 0 && v) {
            i++;
            if (strcmp(v, "oldest") == 0) opts.start = SHMBUS_START_OLDEST;
            else if (strcmp(v, "next") == 0) opts.start = SHMBUS_START_NEXT;
            else if (strcmp(v, "latest") == 0) opts.start = SHMBUS_START_LATEST;
            else usage();
        } else if (strcmp(a, "--lossless") == 0) {
            opts.flags |= SHMBUS_LOSSLESS;
        } else if (strcmp(a, "--count") == 0 && v) {
            i++;
            char *end;
            count = strtoll(v, &end, 10);
            if (*v == '\0' || *end != '\0' || count < 0) usage();
        } else if (strcmp(a, "--timeout") == 0 && v) {
            i++;
            char *end;
            timeout = strtod(v, &end);
            if (*v == '\0' || *end != '\0' || !(timeout >= 0) || timeout > 1e9) usage();
        } else if (a[0] == '-' && a[1] != '\0') {
            usage();
        } else if (name == NULL) {
            name = a;
        } else {
            usage();
        }
    }
    if (name == NULL) usage();
    bool lossless = (opts.flags & SHMBUS_LOSSLESS) != 0;
    if (lossless && kind != KIND_BUS) usage();
    int64_t timeout_ns = timeout < 0 ? -1 : (int64_t)(timeout * 1e9);
    /* --timeout 0: "no message for 0 seconds" means do not wait at all. */

    shmbus_subscriber_t *bus = NULL;
    shmbus_journal_subscriber_t *journal = NULL;
    shmbus_pool_subscriber_t *pool = NULL;
    shmbus_consumer_t *consumer = NULL;
    shmbus_status_t st;
    size_t msg_size = 0;
    switch (kind) {
    case KIND_BUS:
        st = shmbus_subscriber_open(name, &opts, &bus);
        if (st == SHMBUS_OK) st = shmbus_subscriber_msg_size(bus, &msg_size);
        break;
    case KIND_JOURNAL:
        st = shmbus_journal_subscriber_join(name, &opts, &journal);
        if (st == SHMBUS_OK) st = shmbus_journal_subscriber_msg_size(journal, &msg_size);
        break;
    case KIND_POOL: st = shmbus_pool_subscriber_open(name, &opts, &pool); break;
    default: st = shmbus_consumer_open(name, &opts, &consumer); break;
    }
    if (st != SHMBUS_OK) {
        fprintf(stderr, "subscriber: %s\n", shmbus_error_message());
        shmbus_subscriber_close(bus);
        shmbus_journal_subscriber_close(journal);
        return 1;
    }
    if (lossless) fprintf(stderr, "lossless pid %ld\n", (long)getpid());
    fputs("ready\n", stderr);
    fflush(stderr);

    unsigned char *buf = msg_size ? malloc(msg_size) : NULL;
    if (msg_size && !buf) {
        fputs("subscriber: out of memory\n", stderr);
        return 1;
    }
    int code = 0;
    long long received = 0;
    while (count < 0 || received < count) {
        size_t len = msg_size;
        uint64_t skipped = 0;
        shmbus_sample_t *sample = NULL;
        const uint8_t *record = NULL;
        switch (kind) {
        case KIND_BUS: st = shmbus_subscriber_recv(bus, buf, &len, &skipped, timeout_ns); break;
        case KIND_JOURNAL:
            st = shmbus_journal_subscriber_recv(journal, buf, &len, NULL, &skipped, timeout_ns);
            break;
        case KIND_POOL: st = shmbus_pool_subscriber_recv(pool, &sample, &skipped, timeout_ns); break;
        default: st = shmbus_consumer_peek(consumer, timeout_ns, &record, &len); break;
        }
        if (st == SHMBUS_MESSAGE) {
            int bad;
            if (record) {
                /* The record's bytes in the stream, valid until the release. */
                bad = print_line(record, len) != 0;
                /* One record at a time: a second peek before the release is
                 * refused with a code (never undefined behaviour). */
                if (received == 0) {
                    const uint8_t *again = NULL;
                    size_t again_len = 0;
                    if (shmbus_consumer_peek(consumer, 0, &again, &again_len) != SHMBUS_ERROR ||
                        shmbus_error_code() != SHMBUS_E_INVALID_ARGUMENT) {
                        fputs("subscriber: a second peek before the release was not refused\n",
                              stderr);
                        bad = 1;
                    }
                }
                st = shmbus_consumer_release(consumer);
                if (st != SHMBUS_OK) {
                    fprintf(stderr, "subscriber: %s\n", shmbus_error_message());
                    bad = 1;
                }
            } else if (sample) {
                const void *data = NULL;
                st = shmbus_sample_data(sample, &data, &len, NULL);
                bad = st != SHMBUS_OK || print_line(data, len) != 0;
                if (st != SHMBUS_OK) fprintf(stderr, "subscriber: %s\n", shmbus_error_message());
                shmbus_sample_release(sample);
            } else {
                bad = print_line(buf, len) != 0;
            }
            if (bad) {
                code = 1;
                break;
            }
            received++;
        } else if (st == SHMBUS_LAGGED) {
            fprintf(stderr, "lagged: skipped %llu\n", (unsigned long long)skipped);
            fflush(stderr);
        } else if (st == SHMBUS_TIMED_OUT || st == SHMBUS_EMPTY) {
            fprintf(stderr, "subscriber: no message for %g seconds (%lld received)\n", timeout,
                    received);
            code = 2;
            break;
        } else {
            fprintf(stderr, "subscriber: %s\n", shmbus_error_message());
            code = 1;
            break;
        }
    }
    free(buf);
    if (lossless) {
        bool still = false;
        if (shmbus_subscriber_is_lossless(bus, &still) != SHMBUS_OK) {
            fprintf(stderr, "subscriber: %s\n", shmbus_error_message());
            code = 1;
        }
        fprintf(stderr, "lossless: %s\n", still ? "yes" : "no");
    }
    shmbus_subscriber_close(bus);
    shmbus_journal_subscriber_close(journal);
    shmbus_pool_subscriber_close(pool);
    shmbus_consumer_close(consumer);
    return code;
}
