// consumer: a typed bus round trip through an installed shmbus (the CMake
// package's shmbus::shmbus). Prints "1 = 42" and exits 0.
#include <shmbus.hpp>

#include <cstdio>
#include <string>
#include <unistd.h>

struct Tick {
    static constexpr std::string_view shmbus_name = "md.Tick";
    std::uint64_t key, val;
};

int main() {
    std::string name = "shmbus-cpp-consumer-" + std::to_string(getpid());
    try {
        auto pub = shmbus::Publisher<Tick>::create(name, shmbus::bus_options(64));
        auto sub = shmbus::Subscriber<Tick>::open(name, shmbus::Start::Oldest);
        pub.publish(Tick{1, 42});
        auto m = sub.recv_for(std::chrono::seconds(1));
        shmbus::remove(name);
        if (!m || !std::holds_alternative<Tick>(*m)) return 1;
        std::printf("%llu = %llu\n", static_cast<unsigned long long>(std::get<Tick>(*m).key),
                    static_cast<unsigned long long>(std::get<Tick>(*m).val));
    } catch (const shmbus::Error &e) {
        std::fprintf(stderr, "consumer: %s\n", e.what());
        (void)shmbus::try_remove(name);
        return 1;
    }
    return 0;
}
