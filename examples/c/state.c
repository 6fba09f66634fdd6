/*
 * state: prints the last value of each key of a journaled bus, one line
 * per key, as a late joiner sees a table kept on the bus.
 *
 *   state [--until SEQ] [--timeout SECS] NAME
 *
 * Joins the journaled bus NAME and folds its journal, then its live
 * messages, into the last value per key, a message's key being its first
 * 8 bytes as a little-endian uint64_t (what a raw journal compacts by).
 * With --until it waits (at most SECS seconds, default 10) until sequence
 * SEQ is folded in; without, it folds what is there now. Then it prints
 * each value's bytes up to the first NUL, one line per key in ascending
 * key order, and "keys N last S rejoins R" on stderr. Exit 0; 2 if SEQ
 * did not come in time; 1 on any error (one line on stderr).
 */
#define _POSIX_C_SOURCE 200809L
#include <shmbus.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
    fputs("usage: state [--until SEQ] [--timeout SECS] NAME\n", stderr);
    exit(1);
}

static int fail(shmbus_state_t *state, uint64_t *keys, unsigned char *value) {
    fprintf(stderr, "state: %s (%s)\n", shmbus_error_message(),
            shmbus_error_code_name(shmbus_error_code()));
    free(keys);
    free(value);
    shmbus_state_close(state);
    return 1;
}

int main(int argc, char **argv) {
    long long until = -1;
    double timeout = 10;
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (strcmp(a, "--until") == 0 && v) {
            i++;
            until = strtoll(v, &end, 10);
            if (*v == '\0' || *end != '\0' || until < 0) usage();
        } else if (strcmp(a, "--timeout") == 0 && v) {
            i++;
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

    shmbus_state_t *state = NULL;
    uint64_t *keys = NULL;
    unsigned char *value = NULL;
    if (shmbus_state_join(name, NULL, &state) != SHMBUS_OK) return fail(state, keys, value);
    shmbus_status_t st;
    if (until >= 0) {
        st = shmbus_state_wait_for(state, (uint64_t)until, (int64_t)(timeout * 1e9));
        if (st == SHMBUS_TIMED_OUT || st == SHMBUS_EMPTY) {
            fprintf(stderr, "state: sequence %lld not folded in within %g seconds\n", until,
                    timeout);
            shmbus_state_close(state);
            return 2;
        }
    } else {
        st = shmbus_state_poll(state, NULL);
    }
    if (st != SHMBUS_OK) return fail(state, keys, value);

    /* Every value is one message: the bus's message size. */
    size_t msg_size = 0, count = 0;
    if (shmbus_state_msg_size(state, &msg_size) != SHMBUS_OK ||
        shmbus_state_len(state, &count) != SHMBUS_OK)
        return fail(state, keys, value);
    keys = malloc((count ? count : 1) * sizeof *keys);
    value = malloc(msg_size ? msg_size : 1);
    if (!keys || !value) {
        fputs("state: out of memory\n", stderr);
        free(keys);
        free(value);
        shmbus_state_close(state);
        return 1;
    }
    if (shmbus_state_keys(state, keys, &count) != SHMBUS_OK) return fail(state, keys, value);
    for (size_t i = 0; i < count; i++) {
        size_t len = msg_size;
        if (shmbus_state_get(state, keys[i], value, &len) != SHMBUS_OK)
            return fail(state, keys, value);
        const unsigned char *nul = memchr(value, '\0', len);
        size_t n = nul ? (size_t)(nul - value) : len;
        if (fwrite(value, 1, n, stdout) != n || putchar('\n') == EOF) {
            fprintf(stderr, "state: writing stdout: %s\n", strerror(errno));
            return 1;
        }
    }
    uint64_t last = 0, rejoins = 0;
    st = shmbus_state_last_seq(state, &last);
    if ((st != SHMBUS_OK && st != SHMBUS_EMPTY) ||
        shmbus_state_rejoins(state, &rejoins) != SHMBUS_OK)
        return fail(state, keys, value);
    if (st == SHMBUS_OK)
        fprintf(stderr, "keys %zu last %" PRIu64 " rejoins %" PRIu64 "\n", count, last, rejoins);
    else
        fprintf(stderr, "keys 0 last none rejoins %" PRIu64 "\n", rejoins);
    free(keys);
    free(value);
    shmbus_state_close(state);
    return fflush(stdout) == 0 ? 0 : 1;
}
