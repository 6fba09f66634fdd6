// subscriber: prints each message of a bus as one line, like `shmbus sub`
// and examples/c/subscriber, with shmbus.hpp.
//
//   subscriber [--kind bus|journal|pool|stream] [--from oldest|next|latest]
//              [--count N] [--timeout SECS] NAME
//
// bus (the default; any bus of fixed-size messages, one or many
// publishers) opens a subscriber that starts where --from says (default
// next); journal joins a journaled bus and starts with its journal; pool
// opens a pool bus's subscriber and reads each message in place (a
// Sample); stream becomes a stream's consumer and reads each record in
// place (a Chunk). Once open it writes "ready" to stderr, then prints each
// message's bytes up to the first NUL on stdout, one line each, and each
// lag as "lagged: skipped N" on stderr. Exit 0 after N messages (--count;
// lags do not count), 2 if no message arrives for SECS seconds (--timeout),
// 1 on any error (one line on stderr).
#include <shmbus.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

namespace {

[[noreturn]] void usage() {
    std::cerr << "usage: subscriber [--kind bus|journal|pool|stream] [--from oldest|next|latest] "
                 "[--count N] [--timeout SECS] NAME\n";
    std::exit(1);
}

void print(shmbus::View v) {
    auto t = v.text();
    std::fwrite(t.data(), 1, t.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

void lagged(std::uint64_t skipped) {
    std::fprintf(stderr, "lagged: skipped %llu\n", static_cast<unsigned long long>(skipped));
    std::fflush(stderr);
}

void ready() {
    std::fputs("ready\n", stderr);
    std::fflush(stderr);
}

} // namespace

int main(int argc, char **argv) {
    std::string kind = "bus";
    shmbus::Start start = shmbus::Start::Next;
    long long count = -1;
    double timeout = -1;
    const char *name = nullptr;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (a == "--kind" && v) {
            kind = argv[++i];
            if (kind == "many") kind = "bus";
        } else if (a == "--from" && v) {
            std::string f = argv[++i];
            if (f == "oldest") start = shmbus::Start::Oldest;
            else if (f == "next") start = shmbus::Start::Next;
            else if (f == "latest") start = shmbus::Start::Latest;
            else usage();
        } else if (a == "--count" && v) {
            count = std::atoll(argv[++i]);
        } else if (a == "--timeout" && v) {
            timeout = std::atof(argv[++i]);
        } else if (a.size() > 1 && a[0] == '-') {
            usage();
        } else if (!name) {
            name = argv[i];
        } else {
            usage();
        }
    }
    if (!name || (kind != "bus" && kind != "journal" && kind != "pool" && kind != "stream")) usage();
    auto wait = timeout < 0 ? shmbus::forever : shmbus::Timeout(static_cast<std::int64_t>(timeout * 1e9));
    long long received = 0;
    auto quiet = [&] {
        std::fprintf(stderr, "subscriber: no message for %g seconds (%lld received)\n", timeout, received);
        return 2;
    };
    try {
        if (kind == "bus") {
            auto sub = shmbus::Subscriber<>::open(name, start);
            ready();
            while (count < 0 || received < count) {
                // The try_ form: a view of the subscriber's own copy, no allocation.
                auto r = sub.try_recv_view(wait);
                if (r.ok()) {
                    print(r.value());
                    received++;
                } else if (r.lagged()) {
                    lagged(r.skipped());
                } else if (r.timed_out() || r.empty()) {
                    return quiet();
                } else {
                    r.throw_if_failed();
                }
            }
        } else if (kind == "journal") {
            auto sub = shmbus::JournalSubscriber<>::join(name);
            ready();
            while (count < 0 || received < count) {
                auto m = sub.recv_for(wait);
                if (!m) return quiet();
                if (auto *l = std::get_if<shmbus::Lagged>(&*m)) {
                    lagged(l->skipped);
                    continue;
                }
                auto &e = std::get<0>(*m);
                print({e.value.data(), e.value.size()});
                received++;
            }
        } else if (kind == "pool") {
            auto sub = shmbus::PoolSubscriber<>::open(name, start);
            ready();
            while (count < 0 || received < count) {
                auto m = sub.recv_for(wait);
                if (!m) return quiet();
                if (auto *l = std::get_if<shmbus::Lagged>(&*m)) {
                    lagged(l->skipped);
                    continue;
                }
                // In place in shared memory, valid while the Sample lives.
                print(std::get<shmbus::Sample<>>(*m).view());
                received++;
            }
        } else {
            auto cons = shmbus::Consumer<>::open(name);
            ready();
            while (count < 0 || received < count) {
                auto chunk = cons.peek(wait);
                if (!chunk) return quiet();
                print(chunk->view());
                chunk->release();
                received++;
            }
        }
    } catch (const shmbus::Error &e) {
        std::cerr << "subscriber: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
