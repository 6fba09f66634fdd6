/*
 * reqrep: a request-response service from C, a server and its clients in
 * separate processes.
 *
 *   reqrep serve NAME [--create] [--count N]
 *   reqrep call NAME [--timeout-ms MS] REQUEST [[--timeout-ms MS] REQUEST]...
 *   reqrep send NAME COUNT
 *
 * `serve` serves NAME (with --create it makes it first: requests and
 * responses up to 256 bytes, 8 calls per client), answering each request
 * with its bytes upper-cased, until it has answered N (default: until
 * killed); it says "ready" on stderr once it serves. `call` sends each
 * REQUEST in turn and waits up to MS milliseconds (the --timeout-ms before
 * it; default: as long as it takes) for its outcome, printing one line per call: "REQUEST -> RESPONSE"
 * or "REQUEST: STATUS CODE" (SHMBUS_TIMED_OUT SHMBUS_E_TIMED_OUT, ...).
 * `send` sends COUNT requests without waiting for a free call slot and
 * prints "sent" or the status and code of each, then exits (its calls are
 * given up). Exit 0; 1 on an error setting up (one line on stderr).
 */
#define _POSIX_C_SOURCE 200809L
#include <shmbus.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
    fputs("usage: reqrep serve NAME [--create] [--count N]"
          " | call NAME [[--timeout-ms MS] REQUEST]... | send NAME COUNT\n",
          stderr);
    exit(1);
}

static int fail(const char *doing) {
    fprintf(stderr, "reqrep: %s: %s (%s)\n", doing, shmbus_error_message(),
            shmbus_error_code_name(shmbus_error_code()));
    return 1;
}

static long long number(const char *s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 0) usage();
    return v;
}

static int serve(const char *name, int create, long long count) {
    shmbus_server_t *server = NULL;
    shmbus_status_t st;
    if (create) {
        shmbus_service_options_t opts = shmbus_service_options_default();
        opts.request_size = 256;
        opts.response_size = 256;
        st = shmbus_server_create(name, &opts, &server);
    } else {
        st = shmbus_server_attach(name, NULL, &server);
    }
    if (st != SHMBUS_OK) return fail(create ? "create" : "attach");
    fputs("ready\n", stderr);
    fflush(stderr);
    for (long long served = 0; count < 0 || served < count;) {
        shmbus_request_t *request = NULL;
        st = shmbus_server_recv(server, &request, -1);
        if (st == SHMBUS_TIMED_OUT) continue;
        if (st != SHMBUS_MESSAGE) {
            shmbus_server_close(server);
            return fail("recv");
        }
        const void *data = NULL;
        size_t len = 0;
        shmbus_request_data(request, &data, &len, NULL);
        unsigned char answer[256];
        for (size_t i = 0; i < len && i < sizeof answer; i++) {
            answer[i] = (unsigned char)toupper(((const unsigned char *)data)[i]);
        }
        st = shmbus_request_respond(request, answer, len);
        if (st == SHMBUS_ERROR) {
            /* Still ours: refused, so the caller is not left waiting. */
            fail("respond");
            shmbus_request_refuse(request);
        }
        served++;
    }
    shmbus_server_close(server);
    return 0;
}

/* Each REQUEST in turn; a --timeout-ms MS before one applies from there on. */
static int call(const char *name, char **args, int n) {
    shmbus_client_t *client = NULL;
    if (shmbus_client_attach(name, NULL, &client) != SHMBUS_OK) return fail("attach");
    int64_t timeout_ns = -1;
    for (int i = 0; i < n; i++) {
        if (strcmp(args[i], "--timeout-ms") == 0 && i + 1 < n) {
            timeout_ns = (int64_t)number(args[++i]) * 1000000;
            continue;
        }
        char response[257];
        size_t len = sizeof response - 1;
        shmbus_status_t st = shmbus_client_call(client, args[i], strlen(args[i]), response,
                                                &len, NULL, timeout_ns);
        if (st == SHMBUS_MESSAGE) {
            response[len] = '\0';
            printf("%s -> %s\n", args[i], response);
        } else {
            printf("%s: %s %s\n", args[i], shmbus_status_name(st),
                   shmbus_error_code_name(shmbus_error_code()));
        }
        fflush(stdout);
    }
    shmbus_client_close(client);
    return 0;
}

static int send_all(const char *name, long long count) {
    shmbus_client_t *client = NULL;
    if (shmbus_client_attach(name, NULL, &client) != SHMBUS_OK) return fail("attach");
    for (long long i = 0; i < count; i++) {
        uint64_t id = 0;
        shmbus_status_t st = shmbus_client_send(client, "x", 1, &id, 0);
        if (st == SHMBUS_OK) {
            puts("sent");
        } else {
            printf("%s %s\n", shmbus_status_name(st), shmbus_error_code_name(shmbus_error_code()));
        }
    }
    fflush(stdout);
    shmbus_client_close(client);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) usage();
    const char *cmd = argv[1], *name = argv[2];
    if (strcmp(cmd, "serve") == 0) {
        int create = 0;
        long long count = -1;
        for (int i = 3; i < argc; i++) {
            if (strcmp(argv[i], "--create") == 0) {
                create = 1;
            } else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
                count = number(argv[++i]);
            } else {
                usage();
            }
        }
        return serve(name, create, count);
    }
    if (strcmp(cmd, "call") == 0) {
        if (argc < 4) usage();
        return call(name, argv + 3, argc - 3);
    }
    if (strcmp(cmd, "send") == 0 && argc == 4) return send_all(name, number(argv[3]));
    usage();
}
