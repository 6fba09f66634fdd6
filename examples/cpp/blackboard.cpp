// blackboard: a blackboard (the latest value of each key) from C++, with
// the command lines of examples/c/blackboard's first three commands.
//
//   blackboard create NAME KEYS KEY_SIZE VALUE_SIZE
//   blackboard put NAME KEY [VALUE]     (no VALUE: remove KEY)
//   blackboard get NAME KEY
//
// Keys and values are the argument's bytes zero-padded to the table's
// sizes, as `shmbus put` pads them; values print up to the first NUL, as
// `shmbus get` prints them. `put` attaches as the writer (none may live)
// and prints the write's version; `get` prints "VERSION\tVALUE".
// Exit 0; 3 for a key `get` did not find; 1 on any error (one line on
// stderr).
#include <shmbus.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

[[noreturn]] void usage() {
    std::fputs("usage: blackboard create NAME KEYS KEY_SIZE VALUE_SIZE | put NAME KEY [VALUE] | get NAME KEY\n",
               stderr);
    std::exit(1);
}

// `arg` zero-padded to `size` bytes.
std::vector<std::byte> padded(const std::string &arg, std::size_t size) {
    if (arg.size() > size) {
        std::fprintf(stderr, "blackboard: %s is %zu bytes, the table's are %zu\n", arg.c_str(), arg.size(), size);
        std::exit(1);
    }
    std::vector<std::byte> out(size);
    for (std::size_t i = 0; i < arg.size(); i++) out[i] = static_cast<std::byte>(arg[i]);
    return out;
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 3) usage();
    std::string cmd = argv[1];
    const char *name = argv[2];
    try {
        if (cmd == "create" && argc == 6) {
            auto opts = shmbus::blackboard_options(std::strtoull(argv[3], nullptr, 10),
                                                   static_cast<std::uint32_t>(std::atoi(argv[4])),
                                                   static_cast<std::uint32_t>(std::atoi(argv[5])));
            shmbus::BlackboardWriter<>::create(name, opts);
            return 0;
        }
        if (cmd == "put" && (argc == 4 || argc == 5)) {
            // The sizes come from a reader; then this process becomes the writer.
            auto reader = shmbus::BlackboardReader<>::open(name);
            auto key = padded(argv[3], reader.key_size());
            auto writer = shmbus::BlackboardWriter<>::attach(name);
            if (argc == 5) {
                auto value = padded(argv[4], reader.value_size());
                std::printf("%llu\n", static_cast<unsigned long long>(writer.put(key, value)));
            } else {
                auto v = writer.remove(key);
                if (!v) {
                    std::fprintf(stderr, "blackboard: %s is not there\n", argv[3]);
                    return 3;
                }
                std::printf("%llu\n", static_cast<unsigned long long>(*v));
            }
            return 0;
        }
        if (cmd == "get" && argc == 4) {
            auto reader = shmbus::BlackboardReader<>::open(name);
            auto got = reader.get(padded(argv[3], reader.key_size()));
            if (!got) return 3;
            auto text = shmbus::View{got->value.data(), got->value.size()}.text();
            std::printf("%llu\t%.*s\n", static_cast<unsigned long long>(got->version), static_cast<int>(text.size()),
                        text.data());
            return 0;
        }
    } catch (const shmbus::Error &e) {
        std::fprintf(stderr, "blackboard: %s (%s)\n", e.what(), shmbus::code_name(e.code()));
        return 1;
    }
    usage();
}
