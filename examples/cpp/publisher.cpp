// publisher: publishes each line of stdin (without its newline) as one
// message, like `shmbus pub` and examples/c/publisher, with shmbus.hpp.
//
//   publisher [--kind bus|many|journal|pool|stream] NAME
//
// bus (the default) attaches as the single publisher of an existing bus,
// many as one of the publishers of a many-publisher bus, journal as the
// publisher of a journaled bus, pool as the publisher of a pool bus (a
// message is the line's exact length, written in place into a loaned
// block), stream as the producer of a stream (one record per line). On the
// other kinds a message is zero-padded to the bus's message size; a line
// longer than a message is an error. Exit 0 at the end of stdin, 1 on any
// error (one line on stderr).
#include <shmbus.hpp>

#include <cstring>
#include <iostream>
#include <string>

namespace {

[[noreturn]] void usage() {
    std::cerr << "usage: publisher [--kind bus|many|journal|pool|stream] NAME\n";
    std::exit(1);
}

// Publishes each line with `publish`.
template <class F>
int lines(F &&publish) {
    std::string line;
    unsigned long long number = 0;
    while (std::getline(std::cin, line)) {
        number++;
        try {
            publish(line);
        } catch (const shmbus::Error &e) {
            std::cerr << "publisher: line " << number << ": " << e.what() << "\n";
            return 1;
        }
    }
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    std::string kind = "bus";
    const char *name = nullptr;
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--kind") == 0 && i + 1 < argc) kind = argv[++i];
        else if (std::strncmp(argv[i], "--kind=", 7) == 0) kind = argv[i] + 7;
        else if (argv[i][0] == '-' && argv[i][1] != '\0') usage();
        else if (!name) name = argv[i];
        else usage();
    }
    if (!name) usage();
    try {
        if (kind == "bus") {
            auto pub = shmbus::Publisher<>::attach(name);
            return lines([&](const std::string &l) { pub.publish(l); });
        } else if (kind == "many") {
            auto pub = shmbus::ManyPublisher<>::attach(name);
            return lines([&](const std::string &l) { pub.publish(l); });
        } else if (kind == "journal") {
            auto pub = shmbus::JournalPublisher<>::attach(name);
            int code = lines([&](const std::string &l) { pub.publish(l); });
            pub.close();
            return code;
        } else if (kind == "pool") {
            auto pub = shmbus::PoolPublisher<>::attach(name);
            return lines([&](const std::string &l) {
                // Written in place: the loan's bytes are the block's.
                auto loan = pub.loan(l.size());
                std::memcpy(loan.data(), l.data(), l.size());
                loan.publish();
            });
        } else if (kind == "stream") {
            auto prod = shmbus::Producer<>::attach(name);
            return lines([&](const std::string &l) { prod.push(l); });
        }
    } catch (const shmbus::Error &e) {
        std::cerr << "publisher: " << e.what() << "\n";
        return 1;
    }
    usage();
}
