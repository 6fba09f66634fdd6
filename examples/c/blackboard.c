/*
 * blackboard: a blackboard (the latest value of each key) from C.
 *
 *   blackboard create NAME KEYS KEY_SIZE VALUE_SIZE
 *   blackboard put NAME KEY [VALUE]     (no VALUE: remove KEY)
 *   blackboard get NAME KEY
 *   blackboard dump NAME [SINCE]
 *   blackboard watch NAME KEY UNTIL
 *   blackboard check NAME
 *
 * Keys and values are the argument's bytes zero-padded to the table's
 * sizes, as `shmbus put` pads them; values print up to the first NUL, as
 * `shmbus get` prints them. `put` attaches as the writer (none may live)
 * and prints the write's version; `get` prints "VERSION\tVALUE"; `dump`
 * prints "KEY=VALUE VERSION" per live key (or, with SINCE, per entry
 * written after version SINCE, "KEY removed VERSION" for a removal), in
 * table order. `watch` reads KEY through an entry handle (the key
 * resolved once) each time the table changes, printing "VERSION\tVALUE"
 * when its version changes and "-" when it goes, until its value is
 * UNTIL; it says "ready" on stderr once it has read the key the first
 * time. `check` creates NAME (2 keys of 4 bytes, 8-byte values), goes
 * through every status and error the API gives and removes it.
 * Exit 0; 3 for a key `get` did not find; 1 on any error (one line on
 * stderr).
 */
#define _POSIX_C_SOURCE 200809L
#include <shmbus.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
    fputs("usage: blackboard create NAME KEYS KEY_SIZE VALUE_SIZE | put NAME KEY [VALUE]"
          " | get NAME KEY | dump NAME [SINCE] | watch NAME KEY UNTIL | check NAME\n",
          stderr);
    exit(1);
}

static int fail(const char *doing) {
    fprintf(stderr, "blackboard: %s: %s (%s)\n", doing, shmbus_error_message(),
            shmbus_error_code_name(shmbus_error_code()));
    return 1;
}

/* `arg` zero-padded to `size` bytes in `out`; 0 if it is longer. */
static int padded(const char *arg, unsigned char *out, size_t size) {
    size_t n = strlen(arg);
    if (n > size) {
        fprintf(stderr, "blackboard: %s is %zu bytes, the table's are %zu\n", arg, n, size);
        return 0;
    }
    memset(out, 0, size);
    memcpy(out, arg, n);
    return 1;
}

static unsigned long long number(const char *s) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s == '\0' || *end != '\0') usage();
    return v;
}

/* Prints one entry of a view: "KEY=VALUE VERSION" or "KEY removed VERSION". */
static int print_entry(void *ctx, const uint8_t *key, size_t key_len, const uint8_t *value,
                       size_t value_len, uint64_t version) {
    (void)ctx;
    printf("%.*s", (int)strnlen((const char *)key, key_len), (const char *)key);
    if (value == NULL) {
        printf(" removed %" PRIu64 "\n", version);
    } else {
        printf("=%.*s %" PRIu64 "\n", (int)strnlen((const char *)value, value_len),
               (const char *)value, version);
    }
    return 0;
}

/* Counts entries; stops after the first when ctx's count says so. */
static int count_entry(void *ctx, const uint8_t *key, size_t key_len, const uint8_t *value,
                       size_t value_len, uint64_t version) {
    (void)key, (void)key_len, (void)value, (void)value_len, (void)version;
    int *n = ctx;
    return ++*n >= 1 ? 1 : 0;
}

#define EXPECT(cond, what)                                                                    \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "blackboard check: %s failed (line %d; last error %s: %s)\n", what, \
                    __LINE__, shmbus_error_code_name(shmbus_error_code()),                    \
                    shmbus_error_message());                                                  \
            status = 1;                                                                       \
            goto out;                                                                         \
        }                                                                                     \
    } while (0)

/* Every status and error of the API, on a fresh table of two keys. */
static int check(const char *name) {
    int status = 0;
    shmbus_blackboard_writer_t *w = NULL, *w2 = NULL;
    shmbus_blackboard_reader_t *r = NULL, *r2 = NULL;
    shmbus_blackboard_entry_reader_t *ea = NULL;
    shmbus_blackboard_entry_writer_t *wa = NULL;
    shmbus_blackboard_options_t opts = shmbus_blackboard_options_default();
    opts.keys = 2;
    opts.key_size = 4;
    opts.value_size = 8;
    uint64_t version = 0;
    unsigned char buf[8];
    size_t len = sizeof buf;

    EXPECT(shmbus_blackboard_writer_create(name, &opts, &w) == SHMBUS_OK, "create");
    EXPECT(shmbus_blackboard_writer_create(name, &opts, &w2) == SHMBUS_ERROR &&
               shmbus_error_code() == SHMBUS_E_EXISTS && w2 == NULL,
           "a second create is EXISTS");
    EXPECT(shmbus_blackboard_writer_attach(name, NULL, &w2) == SHMBUS_ERROR &&
               shmbus_error_code() == SHMBUS_E_ROLE_TAKEN,
           "a second writer is ROLE_TAKEN");
    EXPECT(shmbus_blackboard_reader_open(name, NULL, &r) == SHMBUS_OK, "open");
    EXPECT(shmbus_blackboard_reader_get(r, "AAPL", 4, buf, &len, &version) == SHMBUS_EMPTY,
           "a missing key is EMPTY");
    EXPECT(shmbus_blackboard_reader_wait(r, 0, 0, &version) == SHMBUS_EMPTY,
           "a wait of 0 ns with nothing written is EMPTY");
    EXPECT(shmbus_blackboard_reader_wait(r, 0, 1000000, &version) == SHMBUS_TIMED_OUT,
           "a wait of 1 ms with nothing written is TIMED_OUT");
    EXPECT(shmbus_blackboard_writer_put(w, "AAPL", 4, "101.5\0\0\0", 8, &version) == SHMBUS_OK &&
               version == 1,
           "put AAPL is version 1");
    EXPECT(shmbus_blackboard_writer_put(w, "MSFT", 4, "400.25\0\0", 8, &version) == SHMBUS_OK &&
               version == 2,
           "put MSFT is version 2");
    EXPECT(shmbus_blackboard_writer_put(w, "GOOG", 4, "1\0\0\0\0\0\0\0", 8, NULL) == SHMBUS_FULL &&
               shmbus_error_code() == SHMBUS_E_FULL,
           "a third key in a table of two is FULL");
    EXPECT(shmbus_blackboard_writer_put(w, "AAP", 3, "1\0\0\0\0\0\0\0", 8, NULL) == SHMBUS_ERROR &&
               shmbus_error_code() == SHMBUS_E_INVALID_ARGUMENT,
           "a 3-byte key is INVALID_ARGUMENT");
    EXPECT(shmbus_blackboard_writer_put(w, "AAPL", 4, "1", 1, NULL) == SHMBUS_ERROR &&
               shmbus_error_code() == SHMBUS_E_INVALID_ARGUMENT,
           "a 1-byte value is INVALID_ARGUMENT");
    EXPECT(shmbus_blackboard_writer_put(w, "AAPL", 4, "102.0\0\0\0", 8, &version) == SHMBUS_OK &&
               version == 3,
           "an update of a full table is version 3");
    EXPECT(shmbus_blackboard_reader_wait(r, 0, -1, &version) == SHMBUS_OK && version == 3,
           "a wait past 0 gives version 3");
    len = sizeof buf;
    EXPECT(shmbus_blackboard_reader_get(r, "AAPL", 4, buf, &len, &version) == SHMBUS_MESSAGE &&
               len == 8 && version == 3 && memcmp(buf, "102.0\0\0\0", 8) == 0,
           "get AAPL is 102.0, version 3");
    len = 4;
    EXPECT(shmbus_blackboard_reader_get(r, "AAPL", 4, buf, &len, &version) == SHMBUS_TOO_SMALL &&
               len == 8,
           "a 4-byte buffer is TOO_SMALL, saying 8");
    len = sizeof buf;
    EXPECT(shmbus_blackboard_reader_get(r, "AAPLX", 5, buf, &len, &version) == SHMBUS_ERROR &&
               shmbus_error_code() == SHMBUS_E_INVALID_ARGUMENT,
           "a 5-byte key is INVALID_ARGUMENT");
    EXPECT(shmbus_blackboard_writer_remove(w, "MSFT", 4, &version) == SHMBUS_OK && version == 4,
           "remove MSFT is version 4");
    EXPECT(shmbus_blackboard_writer_remove(w, "MSFT", 4, &version) == SHMBUS_EMPTY,
           "removing it again is EMPTY");
    int n = 0;
    EXPECT(shmbus_blackboard_reader_entries(r, count_entry, &n) == SHMBUS_OK && n == 1,
           "a visit that returns non-zero stops");
    EXPECT(shmbus_blackboard_reader_entries(r, NULL, NULL) == SHMBUS_ERROR &&
               shmbus_error_code() == SHMBUS_E_INVALID_ARGUMENT,
           "a NULL visit is INVALID_ARGUMENT");
    size_t ks = 0, vs = 0;
    EXPECT(shmbus_blackboard_reader_sizes(r, &ks, &vs) == SHMBUS_OK && ks == 4 && vs == 8,
           "sizes are 4 and 8");
    EXPECT(shmbus_blackboard_reader_version(r, &version) == SHMBUS_OK && version == 4,
           "the table's version is 4");
    shmbus_open_options_t oo = shmbus_open_options_default();
    oo.type_name = "u64";
    oo.type_size = 8;
    oo.type_align = 8;
    EXPECT(shmbus_blackboard_reader_open(name, &oo, &r2) == SHMBUS_OK, "a type of the value size opens");
    shmbus_blackboard_reader_close(r2);
    r2 = NULL;
    oo.type_name = "u32";
    oo.type_size = 4;
    oo.type_align = 4;
    EXPECT(shmbus_blackboard_reader_open(name, &oo, &r2) == SHMBUS_ERROR &&
               shmbus_error_code() == SHMBUS_E_TYPE_MISMATCH && r2 == NULL,
           "a type of another size is TYPE_MISMATCH");
    shmbus_blackboard_writer_close(w);
    w = NULL;
    EXPECT(shmbus_blackboard_writer_attach(name, NULL, &w) == SHMBUS_OK,
           "a writer attaches once the first is closed");
    EXPECT(shmbus_blackboard_writer_put(w, "MSFT", 4, "401\0\0\0\0\0", 8, &version) == SHMBUS_OK &&
               version == 5,
           "versions go on after an attach");

    /* Entry handles: AAPL resolved once, read and written through them. */
    EXPECT(shmbus_blackboard_reader_entry(r, "AAP", 3, &ea) == SHMBUS_ERROR &&
               shmbus_error_code() == SHMBUS_E_INVALID_ARGUMENT && ea == NULL,
           "an entry reader of a 3-byte key is INVALID_ARGUMENT");
    EXPECT(shmbus_blackboard_writer_entry(w, "AAPLX", 5, &wa) == SHMBUS_ERROR &&
               shmbus_error_code() == SHMBUS_E_INVALID_ARGUMENT && wa == NULL,
           "an entry writer of a 5-byte key is INVALID_ARGUMENT");
    EXPECT(shmbus_blackboard_reader_entry(r, "AAPL", 4, &ea) == SHMBUS_OK, "AAPL's entry reader");
    EXPECT(shmbus_blackboard_writer_entry(w, "AAPL", 4, &wa) == SHMBUS_OK, "AAPL's entry writer");
    len = sizeof buf;
    EXPECT(shmbus_blackboard_entry_reader_get(ea, buf, &len, &version) == SHMBUS_MESSAGE &&
               len == 8 && version == 3 && memcmp(buf, "102.0\0\0\0", 8) == 0,
           "AAPL through its entry is 102.0, version 3");
    len = 4;
    EXPECT(shmbus_blackboard_entry_reader_get(ea, buf, &len, &version) == SHMBUS_TOO_SMALL &&
               len == 8,
           "a 4-byte buffer is TOO_SMALL through an entry, saying 8");
    EXPECT(shmbus_blackboard_writer_put_entry(w, wa, "103.5\0\0\0", 8, &version) == SHMBUS_OK &&
               version == 6,
           "a put through the entry is version 6");
    EXPECT(shmbus_blackboard_writer_put_entry(w, wa, "1", 1, &version) == SHMBUS_ERROR &&
               shmbus_error_code() == SHMBUS_E_INVALID_ARGUMENT,
           "a 1-byte value through an entry is INVALID_ARGUMENT");
    len = sizeof buf;
    EXPECT(shmbus_blackboard_entry_reader_get(ea, buf, &len, &version) == SHMBUS_MESSAGE &&
               version == 6 && memcmp(buf, "103.5\0\0\0", 8) == 0,
           "AAPL through its entry is 103.5, version 6");
    EXPECT(shmbus_blackboard_writer_remove_entry(w, wa, &version) == SHMBUS_OK && version == 7,
           "a removal through the entry is version 7");
    EXPECT(shmbus_blackboard_writer_remove_entry(w, wa, &version) == SHMBUS_EMPTY,
           "removing it again through the entry is EMPTY");
    len = sizeof buf;
    EXPECT(shmbus_blackboard_entry_reader_get(ea, buf, &len, &version) == SHMBUS_EMPTY,
           "a removed key is EMPTY through its entry");
    EXPECT(shmbus_blackboard_writer_remove(w, "MSFT", 4, NULL) == SHMBUS_OK, "remove MSFT");
    /* Other keys take AAPL's old entry (4 entries for 2 keys; a removed
     * entry is reused): its handles never read nor write them, and find
     * AAPL wherever it is put again. */
    for (int i = 0; i < 16; i++) {
        char other[5];
        char value[8] = "other";
        snprintf(other, sizeof other, "o%03d", i);
        uint64_t put_at = 0;
        EXPECT(shmbus_blackboard_writer_put(w, other, 4, value, 8, NULL) == SHMBUS_OK, "put another key");
        len = sizeof buf;
        EXPECT(shmbus_blackboard_entry_reader_get(ea, buf, &len, &version) == SHMBUS_EMPTY,
               "AAPL's entry reader reads no other key's value");
        EXPECT(shmbus_blackboard_writer_put_entry(w, wa, "104.0\0\0\0", 8, &put_at) == SHMBUS_OK,
               "AAPL put again through its entry");
        len = sizeof buf;
        EXPECT(shmbus_blackboard_reader_get(r, other, 4, buf, &len, &version) == SHMBUS_MESSAGE &&
                   memcmp(buf, value, 8) == 0,
               "the other key is still its own value");
        len = sizeof buf;
        EXPECT(shmbus_blackboard_entry_reader_get(ea, buf, &len, &version) == SHMBUS_MESSAGE &&
                   version == put_at && memcmp(buf, "104.0\0\0\0", 8) == 0,
               "AAPL put again is read through its entry");
        EXPECT(shmbus_blackboard_writer_remove_entry(w, wa, NULL) == SHMBUS_OK, "remove AAPL");
        EXPECT(shmbus_blackboard_writer_remove(w, other, 4, NULL) == SHMBUS_OK, "remove the other");
    }
    /* An entry reader keeps the table mapped: it outlives its reader. */
    EXPECT(shmbus_blackboard_writer_put_entry(w, wa, "105.0\0\0\0", 8, &version) == SHMBUS_OK,
           "AAPL put once more");
    shmbus_blackboard_reader_close(r);
    r = NULL;
    len = sizeof buf;
    EXPECT(shmbus_blackboard_entry_reader_get(ea, buf, &len, NULL) == SHMBUS_MESSAGE &&
               memcmp(buf, "105.0\0\0\0", 8) == 0,
           "an entry reader reads after its reader is closed");
    EXPECT(shmbus_blackboard_entry_reader_get(NULL, buf, &len, NULL) == SHMBUS_ERROR &&
               shmbus_error_code() == SHMBUS_E_INVALID_ARGUMENT,
           "a NULL entry is INVALID_ARGUMENT");
    printf("check: ok\n");
out:
    shmbus_blackboard_entry_reader_close(ea);
    shmbus_blackboard_entry_writer_close(wa);
    shmbus_blackboard_reader_close(r);
    shmbus_blackboard_reader_close(r2);
    shmbus_blackboard_writer_close(w);
    shmbus_blackboard_writer_close(w2);
    if (shmbus_remove(name) != SHMBUS_OK) status = fail("remove");
    return status;
}

/* Reads `key` through an entry handle on each change of the table until
 * its value is `until` (zero-padded to the value size). */
static int watch(const char *name, const char *key_arg, const char *until_arg) {
    shmbus_blackboard_reader_t *r = NULL;
    shmbus_blackboard_entry_reader_t *e = NULL;
    size_t ks, vs;
    int rc = 1;
    unsigned char *key = NULL, *until = NULL, *value = NULL;
    if (shmbus_blackboard_reader_open(name, NULL, &r) != SHMBUS_OK) return fail("open");
    if (shmbus_blackboard_reader_sizes(r, &ks, &vs) != SHMBUS_OK) {
        rc = fail("sizes");
        goto out;
    }
    key = malloc(ks), until = malloc(vs), value = malloc(vs);
    if (!key || !until || !value || !padded(key_arg, key, ks) || !padded(until_arg, until, vs))
        goto out;
    if (shmbus_blackboard_reader_entry(r, key, ks, &e) != SHMBUS_OK) {
        rc = fail("entry");
        goto out;
    }
    /* The table's version before each read: a write after it ends the
     * wait, so no change is missed between a read and the wait. */
    uint64_t seen = 0, last = 0;
    int there = -1; /* not read yet */
    int ready = 0;
    for (;;) {
        if (shmbus_blackboard_reader_version(r, &seen) != SHMBUS_OK) {
            rc = fail("version");
            goto out;
        }
        size_t len = vs;
        uint64_t version = 0;
        shmbus_status_t st = shmbus_blackboard_entry_reader_get(e, value, &len, &version);
        if (st == SHMBUS_MESSAGE && (there != 1 || version != last)) {
            printf("%" PRIu64 "\t%.*s\n", version, (int)strnlen((const char *)value, len),
                   (const char *)value);
            there = 1, last = version;
        } else if (st == SHMBUS_EMPTY && there != 0) {
            printf("-\n");
            there = 0;
        } else if (st != SHMBUS_MESSAGE && st != SHMBUS_EMPTY) {
            rc = fail("get");
            goto out;
        }
        fflush(stdout);
        if (!ready) {
            fputs("ready\n", stderr);
            ready = 1;
        }
        if (st == SHMBUS_MESSAGE && memcmp(value, until, vs) == 0) {
            rc = 0;
            goto out;
        }
        if (shmbus_blackboard_reader_wait(r, seen, -1, NULL) != SHMBUS_OK) {
            rc = fail("wait");
            goto out;
        }
    }
out:
    shmbus_blackboard_entry_reader_close(e);
    shmbus_blackboard_reader_close(r);
    free(key);
    free(until);
    free(value);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 3) usage();
    const char *cmd = argv[1], *name = argv[2];
    if (strcmp(cmd, "check") == 0 && argc == 3) return check(name);
    if (strcmp(cmd, "watch") == 0 && argc == 5) return watch(name, argv[3], argv[4]);
    if (strcmp(cmd, "create") == 0 && argc == 6) {
        shmbus_blackboard_options_t opts = shmbus_blackboard_options_default();
        opts.keys = number(argv[3]);
        opts.key_size = (uint32_t)number(argv[4]);
        opts.value_size = (uint32_t)number(argv[5]);
        shmbus_blackboard_writer_t *w;
        if (shmbus_blackboard_writer_create(name, &opts, &w) != SHMBUS_OK) return fail("create");
        shmbus_blackboard_writer_close(w);
        return 0;
    }
    if (strcmp(cmd, "put") == 0 && (argc == 4 || argc == 5)) {
        shmbus_blackboard_reader_t *r;
        size_t ks, vs;
        if (shmbus_blackboard_reader_open(name, NULL, &r) != SHMBUS_OK) return fail("open");
        shmbus_status_t st = shmbus_blackboard_reader_sizes(r, &ks, &vs);
        shmbus_blackboard_reader_close(r);
        if (st != SHMBUS_OK) return fail("sizes");
        unsigned char *key = malloc(ks), *value = malloc(vs);
        int rc = 1;
        shmbus_blackboard_writer_t *w = NULL;
        uint64_t version = 0;
        if (!key || !value || !padded(argv[3], key, ks) || (argc == 5 && !padded(argv[4], value, vs)))
            goto put_out;
        if (shmbus_blackboard_writer_attach(name, NULL, &w) != SHMBUS_OK) {
            rc = fail("attach");
            goto put_out;
        }
        st = argc == 5 ? shmbus_blackboard_writer_put(w, key, ks, value, vs, &version)
                       : shmbus_blackboard_writer_remove(w, key, ks, &version);
        if (st == SHMBUS_OK) {
            printf("%" PRIu64 "\n", version);
            rc = 0;
        } else if (st == SHMBUS_EMPTY) {
            fprintf(stderr, "blackboard: no key %s to remove\n", argv[3]);
            rc = 3;
        } else {
            rc = fail(argc == 5 ? "put" : "remove");
        }
    put_out:
        shmbus_blackboard_writer_close(w);
        free(key);
        free(value);
        return rc;
    }
    if ((strcmp(cmd, "get") == 0 && argc == 4) || (strcmp(cmd, "dump") == 0 && argc <= 4)) {
        shmbus_blackboard_reader_t *r;
        size_t ks, vs;
        if (shmbus_blackboard_reader_open(name, NULL, &r) != SHMBUS_OK) return fail("open");
        if (shmbus_blackboard_reader_sizes(r, &ks, &vs) != SHMBUS_OK) {
            shmbus_blackboard_reader_close(r);
            return fail("sizes");
        }
        int rc = 1;
        unsigned char *key = malloc(ks), *value = malloc(vs);
        if (!key || !value) goto get_out;
        if (strcmp(cmd, "dump") == 0) {
            shmbus_status_t st = argc == 4
                ? shmbus_blackboard_reader_changed_since(r, number(argv[3]), print_entry, NULL)
                : shmbus_blackboard_reader_entries(r, print_entry, NULL);
            rc = st == SHMBUS_OK ? 0 : fail("dump");
            goto get_out;
        }
        if (!padded(argv[3], key, ks)) goto get_out;
        size_t len = vs;
        uint64_t version = 0;
        shmbus_status_t st = shmbus_blackboard_reader_get(r, key, ks, value, &len, &version);
        if (st == SHMBUS_MESSAGE) {
            printf("%" PRIu64 "\t%.*s\n", version, (int)strnlen((const char *)value, len),
                   (const char *)value);
            rc = 0;
        } else if (st == SHMBUS_EMPTY) {
            fprintf(stderr, "blackboard: no key %s\n", argv[3]);
            rc = 3;
        } else {
            rc = fail("get");
        }
    get_out:
        shmbus_blackboard_reader_close(r);
        free(key);
        free(value);
        return rc;
    }
    usage();
}
