// test_shmbus: the unit-style test of include/shmbus.hpp, run by ci/cpp.sh
// (also under AddressSanitizer and UBSan). Every kind of handle in one
// process (and a forked child), names unique to this run, all removed.
// Exit 0 when every check passed; otherwise each failure is one line on
// stderr and the exit status is 1.
//
//   test_shmbus recv-tick NAME
//
// opens NAME as a Subscriber<Tick> (md.Tick: two uint64_t) from its oldest
// message and prints the first as "KEY VAL"; a bus of another type exits 3
// with "TypeMismatch: MESSAGE" (python/tests/test_cpp.py: a bus Python
// made, typed).
#include <shmbus.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

// ci/cpp.sh's C++20 build defines this: the std::span views must be there.
#if defined(SHMBUS_TEST_NEED_SPAN) && !defined(__cpp_lib_span)
#error "C++20 without std::span: the span views of shmbus.hpp are not compiled"
#endif

namespace {

int failures = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "test_shmbus: %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__,     \
                         #cond);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

// Runs `f`, which must throw E (and no other exception).
template <class E, class F>
bool throws(F &&f) {
    try {
        f();
    } catch (const E &) {
        return true;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "test_shmbus: threw another exception: %s\n", e.what());
        return false;
    }
    return false;
}

struct Tick {
    static constexpr std::string_view shmbus_name = "md.Tick";
    std::uint64_t key, val;
};
// Same size and alignment, another name: a bus of Tick refuses it.
struct Quote {
    static constexpr std::string_view shmbus_name = "md.Quote";
    std::uint64_t key, val;
};
struct Price {
    static constexpr std::string_view shmbus_name = "md.Price";
    double value;
};
struct Symbol {
    static constexpr std::string_view shmbus_name = "md.Symbol";
    char name[8];
};

// Handles are move-only.
static_assert(!std::is_copy_constructible_v<shmbus::Publisher<Tick>>);
static_assert(!std::is_copy_assignable_v<shmbus::Subscriber<>>);
static_assert(std::is_nothrow_move_constructible_v<shmbus::Subscriber<Tick>>);
static_assert(!std::is_copy_constructible_v<shmbus::Sample<>>);
static_assert(!std::is_copy_constructible_v<shmbus::Loan<Tick>>);
static_assert(!std::is_copy_constructible_v<shmbus::Chunk>);
static_assert(!std::is_copy_constructible_v<shmbus::Request>);
static_assert(!std::is_copy_constructible_v<shmbus::BlackboardWriter<Symbol, Price>>);
static_assert(std::is_nothrow_move_assignable_v<shmbus::Client>);
static_assert(!std::is_copy_constructible_v<shmbus::State>);
// Errors: one class per code, all shmbus::Error, all std::runtime_error.
static_assert(std::is_base_of_v<shmbus::Error, shmbus::TypeMismatch>);
static_assert(std::is_base_of_v<std::runtime_error, shmbus::Error>);
static_assert(std::is_base_of_v<shmbus::PeerGone, shmbus::NoServer>);

std::string prefix;
std::vector<std::string> made;

std::string name(const char *what) {
    std::string n = prefix + what;
    made.push_back(n);
    return n;
}

void bus_typed() {
    auto n = name("tick");
    auto pub = shmbus::Publisher<Tick>::create(n, shmbus::bus_options(8));
    CHECK(pub.valid());
    CHECK(pub.msg_size() == sizeof(Tick));
    // The recorded type is checked at open: another name is refused.
    CHECK(throws<shmbus::TypeMismatch>([&] { shmbus::Subscriber<Quote>::open(n); }));
    try {
        shmbus::Subscriber<Quote>::open(n);
    } catch (const shmbus::Error &e) {
        CHECK(e.code() == shmbus::ErrorCode::TypeMismatch);
        CHECK(std::string(e.what()).find("md.Tick") != std::string::npos);
    }
    // A raw subscriber opens any bus.
    auto raw = shmbus::Subscriber<>::open(n, shmbus::Start::Oldest);
    auto sub = shmbus::Subscriber<Tick>::open(n, shmbus::Start::Oldest);
    CHECK(sub.try_recv().empty());
    CHECK(sub.try_recv(std::chrono::milliseconds(1)).timed_out());
    CHECK(!sub.recv_for(std::chrono::milliseconds(1)).has_value());
    CHECK(pub.publish(Tick{1, 42}) == 0);
    auto r = sub.recv();
    CHECK(std::holds_alternative<Tick>(r) && std::get<Tick>(r).val == 42);
    auto rv = raw.try_recv_view();
    CHECK(rv.ok() && rv->size == sizeof(Tick));
    // Lag is a value: 20 messages through 8 slots.
    for (std::uint64_t i = 0; i < 20; i++) pub.publish(Tick{i, i});
    auto lag = sub.recv();
    CHECK(std::holds_alternative<shmbus::Lagged>(lag) && std::get<shmbus::Lagged>(lag).skipped > 0);
    std::uint64_t skipped = std::get<shmbus::Lagged>(lag).skipped;
    std::uint64_t got = 0;
    for (;;) {
        auto t = sub.try_recv();
        if (!t) {
            CHECK(t.empty());
            break;
        }
        got++;
    }
    CHECK(got + skipped == 20);
    auto latest = sub.latest();
    CHECK(latest && latest->val == 19);
    CHECK(pub.try_publish(Tick{7, 7}).ok());
    // Moves leave the source empty; the moved-to handle works.
    auto moved = std::move(sub);
    CHECK(!sub.valid() && moved.valid());
    CHECK(std::holds_alternative<Tick>(moved.recv()));
    shmbus::Subscriber<Tick> assigned;
    assigned = std::move(moved);
    CHECK(!moved.valid() && assigned.valid());
    // A second publisher of a live bus: RoleTaken.
    CHECK(throws<shmbus::RoleTaken>([&] { shmbus::Publisher<Tick>::attach(n); }));
    // Creating it again: Exists.
    CHECK(throws<shmbus::Exists>([&] { shmbus::Publisher<Tick>::create(n, shmbus::bus_options(8)); }));
}

void bus_raw() {
    auto n = name("raw");
    auto pub = shmbus::Publisher<>::create(n, shmbus::bus_options(16, 32));
    auto sub = shmbus::Subscriber<>::open(n);
    pub.publish("hello");
    auto r = sub.recv();
    CHECK(std::holds_alternative<std::vector<std::byte>>(r));
    auto &v = std::get<std::vector<std::byte>>(r);
    CHECK(v.size() == 32);
    CHECK((shmbus::View{v.data(), v.size()}.text() == "hello"));
    // Longer than a message: TooLong, nothing published.
    CHECK(throws<shmbus::TooLong>([&] { pub.publish(std::string(33, 'x')); }));
    auto t = pub.try_publish(std::string(33, 'x'));
    CHECK(t.failed() && t.code() == shmbus::ErrorCode::TooLong);
    CHECK(throws<shmbus::TooLong>([&] { t.throw_if_failed(); }));
    // A lossless subscriber that does not read: try_publish says full (a
    // value, with its code), publish would wait.
    auto ln = name("lossless");
    auto lpub = shmbus::Publisher<>::create(ln, shmbus::bus_options(4, 16));
    auto lsub = shmbus::Subscriber<>::open(ln, shmbus::open_options(shmbus::Start::Next, SHMBUS_LOSSLESS));
    CHECK(lsub.is_lossless());
    int published = 0;
    shmbus::Result<std::uint64_t> last{shmbus::Status::Ok};
    while ((last = lpub.try_publish("x")).ok() && published < 100) published++;
    CHECK(published == 4 && last.full() && last.code() == shmbus::ErrorCode::Full);
    CHECK(std::holds_alternative<std::vector<std::byte>>(lsub.recv()));
    CHECK(lpub.try_publish("y").ok());
    // Not there: NotFound; a bad name: InvalidName.
    CHECK(throws<shmbus::NotFound>([&] { shmbus::Subscriber<>::open(prefix + "nothing"); }));
    CHECK(throws<shmbus::Error>([&] { shmbus::Subscriber<>::open(""); }));
}

void many() {
    auto n = name("many");
    auto a = shmbus::ManyPublisher<Tick>::create(n, shmbus::bus_options(16));
    auto b = shmbus::ManyPublisher<Tick>::attach(n);
    auto sub = shmbus::Subscriber<Tick>::open(n);
    a.publish(Tick{1, 1});
    CHECK(b.try_publish(Tick{2, 2}).ok());
    CHECK(std::get<Tick>(sub.recv()).key == 1);
    CHECK(std::get<Tick>(sub.recv()).key == 2);
    // A many-publisher bus is not a single-publisher one.
    CHECK(throws<shmbus::WrongKind>([&] { shmbus::Publisher<Tick>::attach(n); }));
}

void journal() {
    auto n = name("journal");
    std::string path = "/tmp/" + prefix + "journal";
    {
        auto pub = shmbus::JournalPublisher<Tick>::create(n, shmbus::bus_options(4), path);
        for (std::uint64_t i = 0; i < 10; i++) pub.publish(Tick{i, i * 10});
        pub.flush();
        // A late joiner gets all ten (the ring holds four).
        auto sub = shmbus::JournalSubscriber<Tick>::join(n);
        for (std::uint64_t i = 0; i < 10; i++) {
            auto m = sub.recv_for(std::chrono::seconds(10));
            CHECK(m && std::holds_alternative<shmbus::Sequenced<Tick>>(*m));
            if (m) CHECK(std::get<shmbus::Sequenced<Tick>>(*m).seq == i && std::get<shmbus::Sequenced<Tick>>(*m).value.val == i * 10);
        }
        CHECK(sub.try_recv().empty());
        // The keyed state: the last value of each key (the first 8 bytes).
        auto state = shmbus::State::join(n);
        CHECK(state.wait_for(9, std::chrono::seconds(10)));
        CHECK(state.len() == 10 && state.keys().size() == 10 && state.keys()[3] == 3);
        auto v = state.get(4);
        CHECK(v && v->size() == sizeof(Tick));
        if (v) {
            Tick t;
            std::memcpy(&t, v->data(), sizeof t);
            CHECK(t.val == 40);
        }
        CHECK(!state.get(99));
        CHECK(state.last_seq() == std::optional<std::uint64_t>(9));
        // A plain bus has no journal.
        CHECK(throws<shmbus::Error>([&] { shmbus::JournalSubscriber<>::join(prefix + "raw"); }));
        pub.close();
        CHECK(!pub.valid());
    }
    shmbus::remove(n);
    made.pop_back();
    std::remove(path.c_str());
}

void pool() {
    auto n = name("pool");
    auto pub = shmbus::PoolPublisher<Tick>::create(n, shmbus::pool_options(4, 64, 8));
    auto sub = shmbus::PoolSubscriber<Tick>::open(n);
    CHECK(throws<shmbus::TypeMismatch>([&] { shmbus::PoolSubscriber<Quote>::open(n); }));
    {
        auto loan = pub.loan();
        loan->key = 5;
        loan->val = 50;
        CHECK(loan.publish() == 0);
        CHECK(!loan.valid());
    }
    {
        auto loan = pub.loan();
        loan.value() = Tick{6, 60};
        // Dropped unpublished: the block goes back.
    }
    pub.publish(Tick{7, 70});
    auto r = sub.recv();
    CHECK(std::holds_alternative<shmbus::Sample<Tick>>(r));
    auto &s = std::get<shmbus::Sample<Tick>>(r);
    CHECK(s.value().val == 50 && s->key == 5 && s.size() == sizeof(Tick) && s.seq() == 0);
    auto s2 = sub.recv_for(std::chrono::seconds(5));
    CHECK(s2 && std::get<shmbus::Sample<Tick>>(*s2)->val == 70);
    // A sample outlives its subscriber.
    { auto gone = std::move(sub); }
    CHECK(s->val == 50);
    s.release();
    CHECK(!s.valid());

    // Raw: any length up to a block.
    auto rn = name("rawpool");
    auto rpub = shmbus::PoolPublisher<>::create(rn, shmbus::pool_options(4, 128, 8));
    auto rsub = shmbus::PoolSubscriber<>::open(rn);
    rpub.publish("in place");
    auto l = rpub.loan(100);
    std::memset(l.data(), 'z', l.size());
    l.truncate(3);
    l.publish();
    auto a = rsub.try_recv(std::chrono::seconds(5));
    CHECK(a.ok() && a->view().str() == "in place");
    auto b = rsub.try_recv(std::chrono::seconds(5));
    CHECK(b.ok() && b->view().str() == "zzz");
#if defined(__cpp_lib_span)
    std::span<const std::byte> sp = b->span();
    CHECK(sp.size() == 3 && b->view().span().data() == sp.data());
#endif
    CHECK(rsub.try_recv().empty());
    CHECK(throws<shmbus::TooLong>([&] { rpub.loan(129); }));
}

void stream() {
    auto n = name("stream");
    auto prod = shmbus::Producer<Tick>::create(n, shmbus::stream_options(256));
    CHECK(throws<shmbus::TypeMismatch>([&] { shmbus::Consumer<Quote>::open(n); }));
    auto cons = shmbus::Consumer<Tick>::open(n);
    CHECK(throws<shmbus::RoleTaken>([&] { shmbus::Consumer<Tick>::open(n); }));
    prod.push(Tick{1, 10});
    CHECK(prod.try_push(Tick{2, 20}).ok());
    auto t = cons.pop(std::chrono::seconds(5));
    CHECK(t && t->val == 10);
    {
        auto c = cons.peek(std::chrono::seconds(5));
        CHECK(c && c->size() == sizeof(Tick));
        // One record at a time: a second peek is refused.
        auto again = cons.try_peek();
        CHECK(again.failed() && again.code() == shmbus::ErrorCode::InvalidArgument);
    } // the chunk consumes its record
    CHECK(cons.try_pop().empty());
    CHECK(!cons.pop(std::chrono::milliseconds(1)).has_value());
    // Full is a value.
    std::size_t pushed = 0;
    while (prod.try_push(Tick{3, 30}).ok()) pushed++;
    CHECK(pushed > 0 && prod.try_push(Tick{3, 30}).full());

    auto rn = name("rawstream");
    auto rp = shmbus::Producer<>::create(rn, shmbus::stream_options(1024));
    auto rc = shmbus::Consumer<>::open(rn);
    rp.push("one");
    rp.push(std::string(100, 'y'));
    auto p = rc.pop(std::chrono::seconds(5));
    CHECK((p && shmbus::View{p->data(), p->size()}.str() == "one"));
    auto c = rc.peek(std::chrono::seconds(5));
    CHECK(c && c->size() == 100 && c->view().str() == std::string(100, 'y'));
    if (c) c->release();
    CHECK(throws<shmbus::TooLong>([&] { rp.push(std::string(rp.max_record() + 1, 'q')); }));
}

void blackboard() {
    auto n = name("board");
    auto w = shmbus::BlackboardWriter<Symbol, Price>::create(n, shmbus::blackboard_options(8));
    auto r = shmbus::BlackboardReader<Symbol, Price>::open(n);
    // Values of another size are refused.
    CHECK(throws<shmbus::TypeMismatch>([&] { shmbus::BlackboardReader<Symbol, Tick>::open(n); }));
    CHECK(throws<shmbus::RoleTaken>([&] { shmbus::BlackboardWriter<Symbol, Price>::attach(n); }));
    Symbol aapl{"AAPL"}, msft{"MSFT"};
    CHECK(!r.get(aapl));
    auto v1 = w.put(aapl, Price{101.5});
    CHECK(v1 == 1);
    auto g = r.get(aapl);
    CHECK(g && g->value.value == 101.5 && g->version == 1);
    w.put(msft, Price{400.25});
    int seen = 0;
    r.entries([&](shmbus::View k, std::optional<shmbus::View> v, std::uint64_t) {
        CHECK(k.size == sizeof(Symbol) && v && v->size == sizeof(Price));
        seen++;
        return true;
    });
    CHECK(seen == 2);
    CHECK(w.remove(aapl) == std::optional<std::uint64_t>(3));
    CHECK(!w.remove(aapl));
    int removed = 0;
    r.changed_since(2, [&](shmbus::View, std::optional<shmbus::View> v, std::uint64_t) {
        if (!v) removed++;
        return true;
    });
    CHECK(removed == 1);
    CHECK(r.version() == 3);
    CHECK(r.wait(3, std::chrono::milliseconds(1)) == std::nullopt);
    auto we = w.entry(msft);
    auto re = r.entry(msft);
    w.put(we, Price{402});
    auto eg = re.get();
    CHECK(eg && eg->value.value == 402 && eg->version == 4);
    CHECK(r.wait(3, std::chrono::seconds(1)) == std::optional<std::uint64_t>(4));
    w.remove(we);
    CHECK(re.try_get().empty());

    // Raw: keys and values of the table's exact sizes.
    auto rn = name("rawboard");
    auto rw = shmbus::BlackboardWriter<>::create(rn, shmbus::blackboard_options(4, 4, 8));
    auto rr = shmbus::BlackboardReader<>::open(rn);
    rw.put(shmbus::Input("k001", 4), shmbus::Input("value01\0", 8));
    auto rg = rr.get(shmbus::Input("k001", 4));
    CHECK((rg && shmbus::View{rg->value.data(), rg->value.size()}.text() == "value01"));
    CHECK(throws<shmbus::InvalidArgument>([&] { rr.get(shmbus::Input("long key", 8)); }));
    // Full is a value: a fifth key in a table of four.
    for (int i = 0; i < 3; i++) rw.put(shmbus::Input(("x00" + std::to_string(i)).c_str(), 4), shmbus::Input("vvvvvvvv", 8));
    CHECK(rw.try_put(shmbus::Input("y000", 4), shmbus::Input("vvvvvvvv", 8)).full());
    CHECK(throws<shmbus::Full>([&] { rw.put(shmbus::Input("y000", 4), shmbus::Input("vvvvvvvv", 8)); }));
}

void reqrep() {
    auto n = name("svc");
    auto server = shmbus::Server::create(n, shmbus::service_options(64, 64));
    auto client = shmbus::Client::attach(n);
    std::thread t([&] {
        // The first request answered upper-cased, the second refused.
        auto req = server.recv(std::chrono::seconds(10));
        if (!req) return;
        std::string up(req->data().str());
        for (auto &ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        req->respond(up);
        auto req2 = server.recv(std::chrono::seconds(10));
        if (req2) req2->refuse();
        // The third: dropped by the Request's destructor (a refusal too).
        auto req3 = server.recv(std::chrono::seconds(10));
    });
    auto resp = client.call("ping", std::chrono::seconds(10));
    CHECK(std::string(reinterpret_cast<const char *>(resp.data()), resp.size()) == "PING");
    CHECK(throws<shmbus::Refused>([&] { client.call("no", std::chrono::seconds(10)); }));
    char buf[64];
    auto r3 = client.try_call("drop", buf, sizeof buf, std::chrono::seconds(10));
    CHECK(r3.status() == shmbus::Status::Refused);
    t.join();
    // With the server gone: NoServer, as an exception and as a value.
    { auto gone = std::move(server); }
    CHECK(throws<shmbus::NoServer>([&] { client.call("anyone", std::chrono::seconds(10)); }));
    CHECK(client.try_call("anyone", buf, sizeof buf, std::chrono::seconds(10)).status() == shmbus::Status::NoServer);
}

// A handle made before fork() works in the child as the C handle does; the
// child's exit closes nothing of the parent's.
void fork_child() {
    auto n = name("fork");
    auto pub = shmbus::Publisher<Tick>::create(n, shmbus::bus_options(16));
    pid_t pid = fork();
    if (pid == 0) {
        int code = 0;
        try {
            auto sub = shmbus::Subscriber<Tick>::open(n, shmbus::Start::Oldest);
            auto m = sub.recv_for(std::chrono::seconds(10));
            code = m && std::holds_alternative<Tick>(*m) && std::get<Tick>(*m).val == 99 ? 0 : 3;
        } catch (...) {
            code = 4;
        }
        _exit(code);
    }
    pub.publish(Tick{9, 99});
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(pub.publish(Tick{10, 100}) == 1);
}

} // namespace

// A typed subscriber of a bus another language made.
int recv_tick(const char *bus) {
    try {
        auto sub = shmbus::Subscriber<Tick>::open(bus, shmbus::Start::Oldest);
        auto m = sub.recv_for(std::chrono::seconds(30));
        if (!m || !std::holds_alternative<Tick>(*m)) return 1;
        std::printf("%llu %llu\n", static_cast<unsigned long long>(std::get<Tick>(*m).key),
                    static_cast<unsigned long long>(std::get<Tick>(*m).val));
        return 0;
    } catch (const shmbus::TypeMismatch &e) {
        std::printf("TypeMismatch: %s\n", e.what());
        return 3;
    } catch (const shmbus::Error &e) {
        std::fprintf(stderr, "test_shmbus: %s\n", e.what());
        return 1;
    }
}

int main(int argc, char **argv) {
    if (argc == 3 && std::string(argv[1]) == "recv-tick") return recv_tick(argv[2]);
    prefix = "shmbus-cpp-test-" + std::to_string(getpid()) + "-";
    std::printf("shmbus %s\n", shmbus::version());
    void (*tests[])() = {bus_typed, bus_raw, many, journal, pool, stream, blackboard, reqrep, fork_child};
    const char *names[] = {"bus_typed", "bus_raw", "many", "journal", "pool", "stream", "blackboard", "reqrep", "fork"};
    for (std::size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        int before = failures;
        try {
            tests[i]();
        } catch (const shmbus::Error &e) {
            std::fprintf(stderr, "test_shmbus: %s threw %s: %s\n", names[i], shmbus::code_name(e.code()), e.what());
            failures++;
        } catch (const std::exception &e) {
            std::fprintf(stderr, "test_shmbus: %s threw: %s\n", names[i], e.what());
            failures++;
        }
        std::printf("%s %s\n", failures == before ? "ok:" : "FAILED:", names[i]);
    }
    for (auto &n : made) (void)shmbus::try_remove(n);
    if (failures) {
        std::fprintf(stderr, "test_shmbus: %d failed\n", failures);
        return 1;
    }
    std::printf("test_shmbus: all passed\n");
    return 0;
}
