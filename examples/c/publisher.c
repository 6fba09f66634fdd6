/*
 * publisher: publishes each line of stdin (without its newline) as one
 * message on an existing bus, like `shmbus pub`.
 *
 *   publisher [--kind bus|many|journal|pool] [--try] NAME
 *
 * bus (the default) attaches as the single publisher, many as one of the
 * publishers of a many-publisher bus, journal as the publisher of a
 * journaled bus, pool as the publisher of a pool bus. A message is
 * zero-padded to the bus's message size (a pool bus's is the line's exact
 * length); a line longer than a message is an error. --try (a bus only)
 * publishes with shmbus_publisher_try_publish, which never waits for a
 * lossless subscriber: a line it finds no room for ends the run with
 * "publisher: line N: full: MESSAGE" on stderr (the message names the
 * subscriber in the way) and exit status 3, that line not published.
 * Exit 0 at the end of stdin, 1 on any error (one line on stderr).
 */
#define _POSIX_C_SOURCE 200809L
#include <shmbus.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { KIND_BUS, KIND_MANY, KIND_JOURNAL, KIND_POOL };

static void usage(void) {
    fputs("usage: publisher [--kind bus|many|journal|pool] [--try] NAME\n", stderr);
    exit(1);
}

static int parse_kind(const char *s, enum kind *kind) {
    if (strcmp(s, "bus") == 0) *kind = KIND_BUS;
    else if (strcmp(s, "many") == 0) *kind = KIND_MANY;
    else if (strcmp(s, "journal") == 0) *kind = KIND_JOURNAL;
    else if (strcmp(s, "pool") == 0) *kind = KIND_POOL;
    else return -1;
    return 0;
}

int main(int argc, char **argv) {
    enum kind kind = KIND_BUS;
    const char *name = NULL;
    int try_only = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--kind") == 0 && i + 1 < argc) {
            if (parse_kind(argv[++i], &kind) != 0) usage();
        } else if (strncmp(a, "--kind=", 7) == 0) {
            if (parse_kind(a + 7, &kind) != 0) usage();
        } else if (strcmp(a, "--try") == 0) {
            try_only = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            usage();
        } else if (name == NULL) {
            name = a;
        } else {
            usage();
        }
    }
    if (name == NULL || (try_only && kind != KIND_BUS)) usage();

    shmbus_publisher_t *bus = NULL;
    shmbus_many_publisher_t *many = NULL;
    shmbus_journal_publisher_t *journal = NULL;
    shmbus_pool_publisher_t *pool = NULL;
    shmbus_status_t st;
    switch (kind) {
    case KIND_BUS: st = shmbus_publisher_attach(name, NULL, &bus); break;
    case KIND_MANY: st = shmbus_many_publisher_attach(name, NULL, &many); break;
    case KIND_JOURNAL: st = shmbus_journal_publisher_attach(name, NULL, &journal); break;
    default: st = shmbus_pool_publisher_attach(name, NULL, &pool); break;
    }
    if (st != SHMBUS_OK) {
        fprintf(stderr, "publisher: %s\n", shmbus_error_message());
        return 1;
    }

    int code = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    unsigned long long number = 0;
    while ((got = getline(&line, &cap, stdin)) >= 0) {
        number++;
        size_t len = (size_t)got;
        if (len > 0 && line[len - 1] == '\n') len--;
        switch (kind) {
        case KIND_BUS:
            st = try_only ? shmbus_publisher_try_publish(bus, line, len, NULL)
                          : shmbus_publisher_publish(bus, line, len, NULL);
            break;
        case KIND_MANY: st = shmbus_many_publisher_publish(many, line, len, NULL); break;
        case KIND_JOURNAL: st = shmbus_journal_publisher_publish(journal, line, len, NULL); break;
        default: {
            shmbus_loan_t *loan = NULL;
            void *data = NULL;
            st = shmbus_pool_publisher_loan(pool, len, -1, &loan, &data);
            if (st == SHMBUS_OK) {
                if (len > 0) memcpy(data, line, len);
                st = shmbus_loan_publish(loan, NULL);
            }
            break;
        }
        }
        if (st == SHMBUS_FULL && try_only) {
            fprintf(stderr, "publisher: line %llu: full: %s\n", number, shmbus_error_message());
            code = 3;
            break;
        }
        if (st != SHMBUS_OK) {
            fprintf(stderr, "publisher: line %llu: %s\n", number, shmbus_error_message());
            code = 1;
            break;
        }
    }
    if (code == 0 && ferror(stdin)) {
        perror("publisher: reading stdin");
        code = 1;
    }
    free(line);
    shmbus_publisher_close(bus);
    shmbus_many_publisher_close(many);
    shmbus_pool_publisher_close(pool);
    if (shmbus_journal_publisher_close(journal) != SHMBUS_OK) {
        fprintf(stderr, "publisher: %s\n", shmbus_error_message());
        code = 1;
    }
    return code;
}
