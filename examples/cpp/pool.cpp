// pool: a typed pool bus from C++: messages written in place into loaned
// blocks and read in place from samples, no copy on either side.
//
//   pool NAME [COUNT]
//
// Creates the pool bus NAME for md.Frame messages, opens a subscriber,
// publishes COUNT (default 3) frames through loans and prints each as the
// subscriber reads it: "seq=S id=I sum=X". Removes NAME at the end.
#include <shmbus.hpp>

#include <cstdio>
#include <cstdlib>

struct Frame {
    static constexpr std::string_view shmbus_name = "md.Frame";
    std::uint64_t id;
    std::uint32_t pixels[60];
};

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fputs("usage: pool NAME [COUNT]\n", stderr);
        return 1;
    }
    const char *name = argv[1];
    int count = argc > 2 ? std::atoi(argv[2]) : 3;
    try {
        // 8 slots, 16 blocks of 256 bytes, each carrying one Frame.
        auto pub = shmbus::PoolPublisher<Frame>::create(name, shmbus::pool_options(8, 256, 16));
        auto sub = shmbus::PoolSubscriber<Frame>::open(name);
        for (int i = 0; i < count; i++) {
            auto loan = pub.loan(); // one block, written in place
            loan->id = static_cast<std::uint64_t>(i);
            for (std::uint32_t p = 0; p < 60; p++) loan->pixels[p] = p * static_cast<std::uint32_t>(i);
            loan.publish();

            auto got = sub.recv_for(std::chrono::seconds(5));
            if (!got || !std::holds_alternative<shmbus::Sample<Frame>>(*got)) {
                std::fputs("pool: no frame\n", stderr);
                shmbus::remove(name);
                return 1;
            }
            // Read in place: valid while the Sample lives.
            const auto &sample = std::get<shmbus::Sample<Frame>>(*got);
            std::uint64_t sum = 0;
            for (auto px : sample->pixels) sum += px;
            std::printf("seq=%llu id=%llu sum=%llu\n", static_cast<unsigned long long>(sample.seq()),
                        static_cast<unsigned long long>(sample->id), static_cast<unsigned long long>(sum));
        }
        shmbus::remove(name);
    } catch (const shmbus::Error &e) {
        std::fprintf(stderr, "pool: %s\n", e.what());
        (void)shmbus::try_remove(name);
        return 1;
    }
    return 0;
}
