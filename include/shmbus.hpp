// SPDX-License-Identifier: MIT OR Apache-2.0
//
// shmbus.hpp: the C++17 API of shmbus, header-only, over the C API of
// shmbus.h (link with libshmbus: `find_package(shmbus)` then
// `target_link_libraries(app shmbus::shmbus)`, or `pkg-config shmbus`).
//
// Rules:
// - Header-only, C++17 (C++20 adds std::span views). A handle holds its C
//   handle (and sizes read once at open), nothing more: every call is one
//   or a few calls of the C API.
// - Handles (Publisher, Subscriber, PoolPublisher, Producer, Consumer,
//   BlackboardWriter, Server, Client, ...) are move-only RAII owners of one
//   C handle: the destructor calls its C close, nothing more; a moved-from
//   handle is empty (valid() is false) and its destructor does nothing. Use
//   a handle from one thread at a time, as in C.
// - Typed handles (Publisher<Tick>, ...) take a trivially copyable T that
//   names itself: `static constexpr std::string_view shmbus_name =
//   "md.Tick";`. Its name, size and alignment go into the C options, so the
//   bus's recorded type is checked where it is opened, as Rust and Python
//   check it (TypeMismatch otherwise). The default T, Bytes, is raw bytes.
// - Errors are exceptions: shmbus::Error (a std::runtime_error) with the C
//   error code and message, one subclass per code (NotFound, Exists,
//   TypeMismatch, ...). Each receive, send and publish also has a
//   `try_` form, noexcept, returning a Result (status plus value): for hot
//   loops, where empty, timed out, full and lagged are values.
// - Lag is never an exception: a receive returns std::variant<T, Lagged>
//   (or a Result whose lagged() is true and skipped() says how many).
// - Zero-copy reads (pool samples, stream chunks, request bytes) are const
//   views into shared memory: valid while the object that holds them (the
//   Sample, the Chunk, the Request) lives, and never written through.
// - fork(): a handle is exactly as safe across fork() as its C handle; the
//   destructors do nothing but the C close.
#ifndef SHMBUS_HPP
#define SHMBUS_HPP

#include <shmbus.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>
#if defined(__has_include)
#if __has_include(<version>)
#include <version>
#endif
#endif
#if defined(__cpp_lib_span)
#include <span>
#endif

/// The C++ API of shmbus.
namespace shmbus {

// ---------------------------------------------------------------------------
// Statuses, codes, errors

/// What a call did: shmbus_status_t.
enum class Status : int {
    Ok = SHMBUS_OK,               ///< Done.
    Message = SHMBUS_MESSAGE,     ///< A receive returned a message.
    Lagged = SHMBUS_LAGGED,       ///< A receive found this reader lapped.
    Empty = SHMBUS_EMPTY,         ///< Nothing there (timeout 0).
    TimedOut = SHMBUS_TIMED_OUT,  ///< The timeout ran out.
    TooSmall = SHMBUS_TOO_SMALL,  ///< The caller's buffer is too short.
    Full = SHMBUS_FULL,           ///< No room, and the call was not to wait.
    Abandoned = SHMBUS_ABANDONED, ///< A many-publisher claim was skipped.
    PeerGone = SHMBUS_PEER_GONE,  ///< The other side is gone.
    Refused = SHMBUS_REFUSED,     ///< A server refused the request.
    NoServer = SHMBUS_NO_SERVER,  ///< No server is alive to take the request.
    Error = SHMBUS_ERROR,         ///< Failed: see the error code and message.
};

/// Which kind of failure: shmbus_error_code_t.
enum class ErrorCode : int {
    None = SHMBUS_E_NONE,                        ///< No failure yet.
    NotFound = SHMBUS_E_NOT_FOUND,               ///< No such bus (or no directory).
    Exists = SHMBUS_E_EXISTS,                    ///< Something already has the name.
    Permission = SHMBUS_E_PERMISSION,            ///< The mode does not let this user in.
    TypeMismatch = SHMBUS_E_TYPE_MISMATCH,       ///< The bus carries another type.
    WrongKind = SHMBUS_E_WRONG_KIND,             ///< A segment of another kind.
    InvalidName = SHMBUS_E_INVALID_NAME,         ///< Not a valid bus name.
    InvalidArgument = SHMBUS_E_INVALID_ARGUMENT, ///< A bad argument.
    RoleTaken = SHMBUS_E_ROLE_TAKEN,             ///< A live process holds the role.
    TooLong = SHMBUS_E_TOO_LONG,                 ///< A message longer than allowed.
    Abandoned = SHMBUS_E_ABANDONED,              ///< A many-publisher claim was skipped.
    TimedOut = SHMBUS_E_TIMED_OUT,               ///< A wait ran out.
    PoolExhausted = SHMBUS_E_POOL_EXHAUSTED,     ///< No pool block came free.
    TooManySamples = SHMBUS_E_TOO_MANY_SAMPLES,  ///< Too many samples held.
    PeerGone = SHMBUS_E_PEER_GONE,               ///< The other side died.
    Corrupt = SHMBUS_E_CORRUPT,                  ///< Cursors or headers that cannot be right.
    NotJournaled = SHMBUS_E_NOT_JOURNALED,       ///< The bus has no journal.
    Journal = SHMBUS_E_JOURNAL,                  ///< The journal file failed.
    Other = SHMBUS_E_OTHER,                      ///< Anything else: see the message.
    Full = SHMBUS_E_FULL,                        ///< A lossless reader or a full table.
    LosslessRefused = SHMBUS_E_LOSSLESS_REFUSED, ///< A lossless subscriber was refused.
    Busy = SHMBUS_E_BUSY,                        ///< A blackboard entry stayed busy.
    Stuck = SHMBUS_E_STUCK,                      ///< A blackboard entry left mid-write.
};

/// The name of a status ("SHMBUS_OK", ...).
inline const char *status_name(Status s) noexcept { return shmbus_status_name(static_cast<int>(s)); }
/// The name of an error code ("SHMBUS_E_NOT_FOUND", ...).
inline const char *code_name(ErrorCode c) noexcept { return shmbus_error_code_name(static_cast<int>(c)); }
/// The library's version, "MAJOR.MINOR.PATCH".
inline const char *version() noexcept { return shmbus_version(); }
/// This thread's message for the last failed call (copy it to keep it).
inline const char *last_error_message() noexcept { return shmbus_error_message(); }
/// This thread's code for the last failed call.
inline ErrorCode last_error_code() noexcept { return static_cast<ErrorCode>(shmbus_error_code()); }

/// A failed call: the C error code, the status and the library's message.
class Error : public std::runtime_error {
public:
    /// An error of code `code` from a call that said `status`.
    Error(ErrorCode code, Status status, const std::string &message)
        : std::runtime_error(message), code_(code), status_(status) {}
    /// Which kind of failure it was.
    ErrorCode code() const noexcept { return code_; }
    /// What the call said (Status::Error, or an outcome such as TimedOut).
    Status status() const noexcept { return status_; }

private:
    ErrorCode code_;
    Status status_;
};

#define SHMBUS_HPP_ERROR(Name, Base)                                                       \
    class Name : public Base {                                                             \
    public:                                                                                \
        using Base::Base;                                                                  \
    };
/// No such bus or stream, or no directory to create it in.
SHMBUS_HPP_ERROR(NotFound, Error)
/// Something already has the name.
SHMBUS_HPP_ERROR(Exists, Error)
/// The file's (or directory's) mode does not let this user in.
SHMBUS_HPP_ERROR(PermissionDenied, Error)
/// The bus carries another message type (name, size, alignment).
SHMBUS_HPP_ERROR(TypeMismatch, Error)
/// A segment of another kind (a stream opened as a bus, ...).
SHMBUS_HPP_ERROR(WrongKind, Error)
/// The name is not a valid bus name.
SHMBUS_HPP_ERROR(InvalidName, Error)
/// A bad argument: unknown flags, impossible geometry, a loan while one is out.
SHMBUS_HPP_ERROR(InvalidArgument, Error)
/// A live process is the bus's publisher, the stream's producer or consumer.
SHMBUS_HPP_ERROR(RoleTaken, Error)
/// A message longer than the bus, block, stream or buffer carries.
SHMBUS_HPP_ERROR(TooLong, Error)
/// A many-publisher claim was skipped: nothing was published.
SHMBUS_HPP_ERROR(Abandoned, Error)
/// A wait ran out (a journal flush, a bus being created, a call).
SHMBUS_HPP_ERROR(TimedOut, Error)
/// No pool block came free.
SHMBUS_HPP_ERROR(PoolExhausted, Error)
/// A pool subscriber holds SHMBUS_POOL_MAX_HELD samples.
SHMBUS_HPP_ERROR(TooManySamples, Error)
/// The other side died (a stream's peer, a journaled bus's publisher, a server).
SHMBUS_HPP_ERROR(PeerGone, Error)
/// A request-response call the server refused (dropped unanswered).
SHMBUS_HPP_ERROR(Refused, PeerGone)
/// A request-response call with no live server: withdrawn unseen.
SHMBUS_HPP_ERROR(NoServer, PeerGone)
/// Cursors or headers that cannot be right.
SHMBUS_HPP_ERROR(Corrupt, Error)
/// The bus has no journal.
SHMBUS_HPP_ERROR(NotJournaled, Error)
/// The journal file could not be opened, read, written or synced.
SHMBUS_HPP_ERROR(JournalError, Error)
/// Anything else (a system error): see the message.
SHMBUS_HPP_ERROR(OtherError, Error)
/// No room: a lossless subscriber in the way, a full table or stream.
SHMBUS_HPP_ERROR(Full, Error)
/// A lossless subscriber was refused.
SHMBUS_HPP_ERROR(LosslessRefused, Error)
/// A blackboard entry was busy through every try: try again.
SHMBUS_HPP_ERROR(Busy, Error)
/// A blackboard entry was left mid-write by a writer that died.
SHMBUS_HPP_ERROR(Stuck, Error)
#undef SHMBUS_HPP_ERROR

/// Throws the exception of `code` (the subclass of Error that names it).
[[noreturn]] inline void throw_error(ErrorCode code, Status status, const std::string &message) {
    if (status == Status::Refused) throw Refused(code, status, message);
    if (status == Status::NoServer) throw NoServer(code, status, message);
    switch (code) {
    case ErrorCode::NotFound: throw NotFound(code, status, message);
    case ErrorCode::Exists: throw Exists(code, status, message);
    case ErrorCode::Permission: throw PermissionDenied(code, status, message);
    case ErrorCode::TypeMismatch: throw TypeMismatch(code, status, message);
    case ErrorCode::WrongKind: throw WrongKind(code, status, message);
    case ErrorCode::InvalidName: throw InvalidName(code, status, message);
    case ErrorCode::InvalidArgument: throw InvalidArgument(code, status, message);
    case ErrorCode::RoleTaken: throw RoleTaken(code, status, message);
    case ErrorCode::TooLong: throw TooLong(code, status, message);
    case ErrorCode::Abandoned: throw Abandoned(code, status, message);
    case ErrorCode::TimedOut: throw TimedOut(code, status, message);
    case ErrorCode::PoolExhausted: throw PoolExhausted(code, status, message);
    case ErrorCode::TooManySamples: throw TooManySamples(code, status, message);
    case ErrorCode::PeerGone: throw PeerGone(code, status, message);
    case ErrorCode::Corrupt: throw Corrupt(code, status, message);
    case ErrorCode::NotJournaled: throw NotJournaled(code, status, message);
    case ErrorCode::Journal: throw JournalError(code, status, message);
    case ErrorCode::Full: throw Full(code, status, message);
    case ErrorCode::LosslessRefused: throw LosslessRefused(code, status, message);
    case ErrorCode::Busy: throw Busy(code, status, message);
    case ErrorCode::Stuck: throw Stuck(code, status, message);
    case ErrorCode::Other:
    default: throw OtherError(code, status, message);
    }
}

namespace detail {
/// The code a status stands for when the library set none for it.
inline ErrorCode code_of(Status s) noexcept {
    ErrorCode set = last_error_code();
    switch (s) {
    case Status::TimedOut:
        return set == ErrorCode::TimedOut || set == ErrorCode::PoolExhausted ? set : ErrorCode::TimedOut;
    case Status::Full:
        return set == ErrorCode::Full || set == ErrorCode::PoolExhausted || set == ErrorCode::TooManySamples
                   ? set
                   : ErrorCode::Full;
    case Status::Empty: return ErrorCode::Other;
    case Status::Abandoned: return ErrorCode::Abandoned;
    case Status::Refused:
    case Status::NoServer:
    case Status::PeerGone: return ErrorCode::PeerGone;
    default: return set;
    }
}
/// Throws the Error of a failed status, with this thread's message.
[[noreturn]] inline void raise(shmbus_status_t st) {
    Status s = static_cast<Status>(st);
    ErrorCode code = code_of(s);
    std::string msg = shmbus_error_message();
    if (msg.empty()) msg = status_name(s);
    throw_error(code, s, msg);
}
/// Throws unless `st` is SHMBUS_OK.
inline void check(shmbus_status_t st) {
    if (st != SHMBUS_OK) raise(st);
}
} // namespace detail

// ---------------------------------------------------------------------------
// Values

/// Raw bytes: the message type of the untyped handles (Publisher<>, ...).
struct Bytes {};

/// A receive found this reader lapped: `skipped` messages were lost. Not
/// an error: receive again for the next message.
struct Lagged {
    std::uint64_t skipped; ///< How many messages this reader missed.
};

/// A const view of bytes: a pointer and a size. It owns nothing: valid as
/// long as what made it says (a Sample, a Chunk, a Request, a callback).
struct View {
    const std::byte *data = nullptr; ///< The first byte.
    std::size_t size = 0;            ///< How many bytes.
    /// The bytes as a string_view (for text messages).
    std::string_view str() const noexcept { return {reinterpret_cast<const char *>(data), size}; }
    /// The bytes up to the first NUL (a zero-padded text message).
    std::string_view text() const noexcept {
        const void *nul = size ? std::memchr(data, 0, size) : nullptr;
        return {reinterpret_cast<const char *>(data),
                nul ? static_cast<std::size_t>(static_cast<const std::byte *>(nul) - data) : size};
    }
    /// A copy of the bytes.
    std::vector<std::byte> to_vector() const { return {data, data + size}; }
#if defined(__cpp_lib_span)
    /// The bytes as a span (C++20).
    std::span<const std::byte> span() const noexcept { return {data, size}; }
#endif
};

/// Bytes to send: a pointer and a size (from a string_view, a vector, or
/// any pointer and length). Read during the call only.
struct Input {
    const void *data = nullptr; ///< The first byte.
    std::size_t size = 0;       ///< How many bytes.
    /// Nothing.
    Input() = default;
    /// `size` bytes at `data`.
    Input(const void *d, std::size_t n) noexcept : data(d), size(n) {}
    /// A string's bytes (no NUL).
    Input(std::string_view s) noexcept : data(s.data()), size(s.size()) {}
    /// A C string's bytes (no NUL).
    Input(const char *s) noexcept : data(s), size(std::strlen(s)) {}
    /// A string's bytes (no NUL).
    Input(const std::string &s) noexcept : data(s.data()), size(s.size()) {}
    /// A byte vector's bytes.
    Input(const std::vector<std::byte> &v) noexcept : data(v.data()), size(v.size()) {}
    /// A view's bytes.
    Input(View v) noexcept : data(v.data), size(v.size) {}
#if defined(__cpp_lib_span)
    /// A span's bytes (C++20).
    Input(std::span<const std::byte> s) noexcept : data(s.data()), size(s.size()) {}
#endif
};

/// How long a call waits: negative is as long as it takes, zero not at all.
using Timeout = std::chrono::nanoseconds;
/// Wait as long as it takes.
inline constexpr Timeout forever{-1};
/// Do not wait.
inline constexpr Timeout no_wait{0};

/// What a `try_` call did: its status, and its value on success (Message
/// or Ok), the skipped count when lagged. noexcept to make and read.
template <class T>
class Result {
public:
    /// A result of status `s` with value `v` and `skipped` lost messages.
    Result(Status s, T v = T{}, std::uint64_t skipped = 0) noexcept
        : status_(s), value_(std::move(v)), skipped_(skipped),
          code_(s == Status::Ok || s == Status::Message || s == Status::Lagged || s == Status::Empty
                    ? ErrorCode::None
                    : detail::code_of(s)) {}
    /// The status.
    Status status() const noexcept { return status_; }
    /// Done: a message (Status::Message) or Status::Ok.
    bool ok() const noexcept { return status_ == Status::Ok || status_ == Status::Message; }
    /// As ok().
    explicit operator bool() const noexcept { return ok(); }
    /// This reader was lapped: skipped() messages were lost.
    bool lagged() const noexcept { return status_ == Status::Lagged; }
    /// How many messages were lost (lagged() only).
    std::uint64_t skipped() const noexcept { return skipped_; }
    /// Nothing there, and the call was not to wait.
    bool empty() const noexcept { return status_ == Status::Empty; }
    /// Nothing came before the timeout.
    bool timed_out() const noexcept { return status_ == Status::TimedOut; }
    /// No room, and the call was not to wait.
    bool full() const noexcept { return status_ == Status::Full; }
    /// The call failed (anything but ok, lagged, empty, timed out, full).
    bool failed() const noexcept {
        return !ok() && !lagged() && !empty() && !timed_out() && !full();
    }
    /// The error code of a failed status (None when it did not fail).
    ErrorCode code() const noexcept { return code_; }
    /// The value (only when ok()).
    T &value() noexcept { return value_; }
    /// The value (only when ok()).
    const T &value() const noexcept { return value_; }
    /// The value's members (only when ok()).
    T *operator->() noexcept { return &value_; }
    /// The value's members (only when ok()).
    const T *operator->() const noexcept { return &value_; }
    /// Throws the Error of this status (with this thread's last message:
    /// call it before the next shmbus call), unless ok().
    void throw_if_failed() const {
        if (!ok()) throw_error(code_, status_, std::string(shmbus_error_message()));
    }

private:
    Status status_;
    T value_;
    std::uint64_t skipped_;
    ErrorCode code_;
};

/// A message with the sequence number it was published at.
template <class T>
struct Sequenced {
    std::uint64_t seq; ///< Its sequence number.
    T value;           ///< The message.
};

/// A blackboard value with the version it was written at.
template <class T>
struct Versioned {
    T value;               ///< The value.
    std::uint64_t version; ///< The write's version.
};

namespace detail {
template <class T>
inline constexpr bool is_bytes = std::is_same_v<T, Bytes>;

template <class T, class = void>
struct has_name : std::false_type {};
template <class T>
struct has_name<T, std::void_t<decltype(T::shmbus_name)>>
    : std::is_convertible<decltype(T::shmbus_name), std::string_view> {};

/// Checks T may be a message type; true for Bytes.
template <class T>
constexpr bool message_type() {
    if constexpr (!is_bytes<T>) {
        static_assert(std::is_trivially_copyable_v<T>, "shmbus: a message type must be trivially copyable");
        static_assert(std::is_default_constructible_v<T>, "shmbus: a message type must be default constructible");
        static_assert(has_name<T>::value,
                      "shmbus: a message type names itself: static constexpr std::string_view shmbus_name");
    }
    return true;
}

/// The type's name as a NUL-terminated string ("" for Bytes).
template <class T>
std::string name_of() {
    if constexpr (is_bytes<T>) return {};
    else return std::string(std::string_view(T::shmbus_name));
}

/// Open options naming T (name kept alive by the caller's `name`).
template <class T>
shmbus_open_options_t typed_open(shmbus_open_options_t o, const std::string &name) {
    if constexpr (!is_bytes<T>) {
        o.type_name = name.c_str();
        o.type_size = static_cast<std::uint32_t>(sizeof(T));
        o.type_align = static_cast<std::uint32_t>(alignof(T));
    }
    return o;
}

template <class T>
shmbus_bus_options_t typed_bus(shmbus_bus_options_t o, const std::string &name) {
    if constexpr (!is_bytes<T>) {
        o.type_name = name.c_str();
        o.msg_size = static_cast<std::uint32_t>(sizeof(T));
        o.type_align = static_cast<std::uint32_t>(alignof(T));
    }
    return o;
}

inline std::int64_t ns(Timeout t) noexcept { return t.count() < 0 ? -1 : static_cast<std::int64_t>(t.count()); }

/// A move-only owner of one C handle, closed by Close.
template <class H, void (*Close)(H *)>
class Handle {
public:
    Handle() noexcept = default;
    explicit Handle(H *h) noexcept : h_(h) {}
    Handle(const Handle &) = delete;
    Handle &operator=(const Handle &) = delete;
    Handle(Handle &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    Handle &operator=(Handle &&o) noexcept {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    ~Handle() { reset(); }
    void reset() noexcept {
        if (h_) Close(std::exchange(h_, nullptr));
    }
    H *get() const noexcept { return h_; }
    H *release() noexcept { return std::exchange(h_, nullptr); }

private:
    H *h_ = nullptr;
};

inline void close_journal_publisher(shmbus_journal_publisher_t *p) { (void)shmbus_journal_publisher_close(p); }
} // namespace detail

/// Bus options with every default; set capacity (a power of two) and, for
/// a raw bus, msg_size (a typed handle sets msg_size and the type).
inline shmbus_bus_options_t bus_options(std::uint64_t capacity, std::uint32_t msg_size = 0) noexcept {
    shmbus_bus_options_t o = shmbus_bus_options_default();
    o.capacity = capacity;
    o.msg_size = msg_size;
    return o;
}

/// Pool bus options: `capacity` slots, `blocks` blocks of `block_size` bytes.
inline shmbus_bus_options_t pool_options(std::uint64_t capacity, std::uint64_t block_size,
                                         std::uint64_t blocks) noexcept {
    shmbus_bus_options_t o = shmbus_bus_options_default();
    o.capacity = capacity;
    o.pool_block_size = block_size;
    o.pool_blocks = blocks;
    return o;
}

/// Where a new subscriber starts.
enum class Start : std::uint32_t {
    Next = SHMBUS_START_NEXT,     ///< Only messages published after it opened.
    Oldest = SHMBUS_START_OLDEST, ///< The oldest message still in the ring.
    Latest = SHMBUS_START_LATEST, ///< The newest message already published.
};

/// Open options with every default, starting where `start` says.
inline shmbus_open_options_t open_options(Start start = Start::Next, std::uint32_t flags = 0) noexcept {
    shmbus_open_options_t o = shmbus_open_options_default();
    o.start = static_cast<std::uint32_t>(start);
    o.flags = flags;
    return o;
}

/// Removes the bus, stream, blackboard or service `name` (and its side
/// files); processes that have it open keep their mapping. Throws on failure.
inline void remove(const std::string &name) { detail::check(shmbus_remove(name.c_str())); }

/// As remove(), noexcept: Status::Ok or Status::Error.
inline Status try_remove(const std::string &name) noexcept {
    return static_cast<Status>(shmbus_remove(name.c_str()));
}

// ---------------------------------------------------------------------------
// Buses

/// What a receive of T gives in the exception API: a message or a lag.
template <class T>
using Received = std::variant<T, Lagged>;

/// The message type a raw receive gives: a copy of the bytes.
template <class T>
using value_of = std::conditional_t<detail::is_bytes<T>, std::vector<std::byte>, T>;

/// The single publisher of a bus of T (Bytes: raw messages up to the bus's
/// message size, zero-padded).
template <class T = Bytes>
class Publisher {
    static_assert(detail::message_type<T>());

public:
    /// An empty handle.
    Publisher() noexcept = default;
    /// Creates the bus `name` and becomes its publisher (a typed handle sets
    /// opts.msg_size and the type).
    static Publisher create(const std::string &name, shmbus_bus_options_t opts) {
        std::string type = detail::name_of<T>();
        shmbus_bus_options_t o = detail::typed_bus<T>(opts, type);
        shmbus_publisher_t *h = nullptr;
        detail::check(shmbus_publisher_create(name.c_str(), &o, &h));
        return Publisher(h);
    }
    /// Becomes the publisher of the existing bus `name` (whose last publisher
    /// is gone); a typed handle checks its type.
    static Publisher attach(const std::string &name, shmbus_open_options_t opts = open_options()) {
        std::string type = detail::name_of<T>();
        shmbus_open_options_t o = detail::typed_open<T>(opts, type);
        shmbus_publisher_t *h = nullptr;
        detail::check(shmbus_publisher_attach(name.c_str(), &o, &h));
        return Publisher(h);
    }
    /// Publishes `v`; returns its sequence number. Waits for a lossless
    /// subscriber in the way (until it reads or is evicted).
    template <class U = T, std::enable_if_t<!detail::is_bytes<U>, int> = 0>
    std::uint64_t publish(const T &v) {
        return publish_bytes(&v, sizeof v);
    }
    /// Publishes the bytes (zero-padded to the message size); returns its sequence.
    template <class U = T, std::enable_if_t<detail::is_bytes<U>, int> = 0>
    std::uint64_t publish(Input in) {
        return publish_bytes(in.data, in.size);
    }
    /// Publishes without waiting: Full (a lossless subscriber in the way) is
    /// a value; the value is the sequence number.
    template <class U = T, std::enable_if_t<!detail::is_bytes<U>, int> = 0>
    Result<std::uint64_t> try_publish(const T &v) noexcept {
        return try_bytes(&v, sizeof v);
    }
    /// As the typed try_publish, for raw bytes.
    template <class U = T, std::enable_if_t<detail::is_bytes<U>, int> = 0>
    Result<std::uint64_t> try_publish(Input in) noexcept {
        return try_bytes(in.data, in.size);
    }
    /// The bus's message size in bytes.
    std::size_t msg_size() const {
        std::size_t n = 0;
        detail::check(shmbus_publisher_msg_size(h_.get(), &n));
        return n;
    }
    /// The sequence number the next message will get.
    std::uint64_t next_sequence() const {
        std::uint64_t s = 0;
        detail::check(shmbus_publisher_next_sequence(h_.get(), &s));
        return s;
    }
    /// Whether this handle holds a publisher (false once moved from).
    bool valid() const noexcept { return h_.get() != nullptr; }
    /// The C handle (still owned here).
    shmbus_publisher_t *c_handle() const noexcept { return h_.get(); }

private:
    explicit Publisher(shmbus_publisher_t *h) noexcept : h_(h) {}
    std::uint64_t publish_bytes(const void *d, std::size_t n) {
        std::uint64_t seq = 0;
        detail::check(shmbus_publisher_publish(h_.get(), d, n, &seq));
        return seq;
    }
    Result<std::uint64_t> try_bytes(const void *d, std::size_t n) noexcept {
        std::uint64_t seq = 0;
        auto st = static_cast<Status>(shmbus_publisher_try_publish(h_.get(), d, n, &seq));
        return {st == Status::Ok ? Status::Ok : st, seq};
    }
    detail::Handle<shmbus_publisher_t, shmbus_publisher_close> h_;
};

/// One of the publishers of a many-publisher bus of T.
template <class T = Bytes>
class ManyPublisher {
    static_assert(detail::message_type<T>());

public:
    /// An empty handle.
    ManyPublisher() noexcept = default;
    /// Creates the many-publisher bus `name` and becomes one of its publishers.
    static ManyPublisher create(const std::string &name, shmbus_bus_options_t opts) {
        std::string type = detail::name_of<T>();
        shmbus_bus_options_t o = detail::typed_bus<T>(opts, type);
        shmbus_many_publisher_t *h = nullptr;
        detail::check(shmbus_many_publisher_create(name.c_str(), &o, &h));
        return ManyPublisher(h);
    }
    /// Becomes one more publisher of the existing many-publisher bus `name`.
    static ManyPublisher attach(const std::string &name, shmbus_open_options_t opts = open_options()) {
        std::string type = detail::name_of<T>();
        shmbus_open_options_t o = detail::typed_open<T>(opts, type);
        shmbus_many_publisher_t *h = nullptr;
        detail::check(shmbus_many_publisher_attach(name.c_str(), &o, &h));
        return ManyPublisher(h);
    }
    /// Publishes `v`; returns its sequence. Throws Abandoned if the bus
    /// skipped this publisher's claim (nothing published).
    template <class U = T, std::enable_if_t<!detail::is_bytes<U>, int> = 0>
    std::uint64_t publish(const T &v) {
        auto r = try_publish(v);
        if (!r) r.throw_if_failed();
        return r.value();
    }
    /// Publishes the bytes (zero-padded); returns its sequence.
    template <class U = T, std::enable_if_t<detail::is_bytes<U>, int> = 0>
    std::uint64_t publish(Input in) {
        auto r = try_publish(in);
        if (!r) r.throw_if_failed();
        return r.value();
    }
    /// As publish, noexcept: Status::Abandoned is a value.
    template <class U = T, std::enable_if_t<!detail::is_bytes<U>, int> = 0>
    Result<std::uint64_t> try_publish(const T &v) noexcept {
        return try_bytes(&v, sizeof v);
    }
    /// As publish of bytes, noexcept.
    template <class U = T, std::enable_if_t<detail::is_bytes<U>, int> = 0>
    Result<std::uint64_t> try_publish(Input in) noexcept {
        return try_bytes(in.data, in.size);
    }
    /// The bus's message size in bytes.
    std::size_t msg_size() const {
        std::size_t n = 0;
        detail::check(shmbus_many_publisher_msg_size(h_.get(), &n));
        return n;
    }
    /// Whether this handle holds a publisher.
    bool valid() const noexcept { return h_.get() != nullptr; }

private:
    explicit ManyPublisher(shmbus_many_publisher_t *h) noexcept : h_(h) {}
    Result<std::uint64_t> try_bytes(const void *d, std::size_t n) noexcept {
        std::uint64_t seq = 0;
        auto st = static_cast<Status>(shmbus_many_publisher_publish(h_.get(), d, n, &seq));
        return {st, seq};
    }
    detail::Handle<shmbus_many_publisher_t, shmbus_many_publisher_close> h_;
};

/// A subscriber of a bus of T (one or many publishers, or journaled), at
/// its own cursor.
template <class T = Bytes>
class Subscriber {
    static_assert(detail::message_type<T>());

public:
    /// An empty handle.
    Subscriber() noexcept = default;
    /// Opens the bus `name`; a typed handle is refused (TypeMismatch) by a
    /// bus of another type. Add SHMBUS_LOSSLESS to opts.flags for a
    /// lossless subscriber.
    static Subscriber open(const std::string &name, shmbus_open_options_t opts = open_options()) {
        std::string type = detail::name_of<T>();
        shmbus_open_options_t o = detail::typed_open<T>(opts, type);
        shmbus_subscriber_t *h = nullptr;
        detail::check(shmbus_subscriber_open(name.c_str(), &o, &h));
        return Subscriber(h);
    }
    /// Opens the bus `name`, starting where `start` says.
    static Subscriber open(const std::string &name, Start start) { return open(name, open_options(start)); }

    /// The next message or lag, waiting as long as it takes. Throws on failure.
    Received<value_of<T>> recv() {
        auto r = recv_for(forever);
        return std::move(*r);
    }
    /// The next message or lag, waiting at most `timeout`; nullopt if none came.
    std::optional<Received<value_of<T>>> recv_for(Timeout timeout) {
        if constexpr (detail::is_bytes<T>) {
            auto r = try_recv_view(timeout);
            if (r.ok()) return std::optional<Received<value_of<T>>>(std::in_place, std::in_place_index<0>, r.value().to_vector());
            return settle(r);
        } else {
            auto r = try_recv(timeout);
            if (r.ok()) return std::optional<Received<value_of<T>>>(std::in_place, std::in_place_index<0>, r.value());
            return settle(r);
        }
    }
    /// Typed: the next message into the Result, noexcept (Message, Lagged,
    /// Empty, TimedOut or an error).
    template <class U = T, std::enable_if_t<!detail::is_bytes<U>, int> = 0>
    Result<U> try_recv(Timeout timeout = no_wait) noexcept {
        U v{};
        std::size_t len = sizeof v;
        std::uint64_t skipped = 0;
        auto st = static_cast<Status>(shmbus_subscriber_recv(h_.get(), &v, &len, &skipped, detail::ns(timeout)));
        return {st, v, skipped};
    }
    /// Raw: the next message as a view of this subscriber's own copy of it,
    /// valid until the next call on this subscriber (no allocation).
    Result<View> try_recv_view(Timeout timeout = no_wait) noexcept {
        const void *d = nullptr;
        std::size_t len = 0;
        std::uint64_t skipped = 0;
        auto st = static_cast<Status>(
            shmbus_subscriber_recv_borrow(h_.get(), &d, &len, &skipped, detail::ns(timeout)));
        return {st, View{static_cast<const std::byte *>(d), len}, skipped};
    }
    /// The newest message on the bus, without moving the cursor; nullopt
    /// when none (or the newest slot was being rewritten).
    std::optional<value_of<T>> latest() {
        value_of<T> v{};
        void *buf;
        std::size_t len;
        if constexpr (detail::is_bytes<T>) {
            v.resize(msg_size());
            buf = v.data();
            len = v.size();
        } else {
            buf = &v;
            len = sizeof(T);
        }
        auto st = shmbus_subscriber_latest(h_.get(), buf, &len);
        if (st == SHMBUS_EMPTY) return std::nullopt;
        if (st != SHMBUS_MESSAGE) detail::raise(st);
        return v;
    }
    /// The bus's message size in bytes.
    std::size_t msg_size() const {
        std::size_t n = 0;
        detail::check(shmbus_subscriber_msg_size(h_.get(), &n));
        return n;
    }
    /// The sequence number this subscriber reads next.
    std::uint64_t position() const {
        std::uint64_t s = 0;
        detail::check(shmbus_subscriber_position(h_.get(), &s));
        return s;
    }
    /// Whether this subscriber is lossless now (false once evicted).
    bool is_lossless() const {
        bool b = false;
        detail::check(shmbus_subscriber_is_lossless(h_.get(), &b));
        return b;
    }
    /// Whether this handle holds a subscriber.
    bool valid() const noexcept { return h_.get() != nullptr; }
    /// The C handle (still owned here).
    shmbus_subscriber_t *c_handle() const noexcept { return h_.get(); }

private:
    explicit Subscriber(shmbus_subscriber_t *h) noexcept : h_(h) {}
    template <class R>
    static std::optional<Received<value_of<T>>> settle(const R &r) {
        if (r.lagged()) return std::optional<Received<value_of<T>>>(std::in_place, std::in_place_index<1>, Lagged{r.skipped()});
        if (r.timed_out() || r.empty()) return std::nullopt;
        r.throw_if_failed();
        return std::nullopt;
    }
    detail::Handle<shmbus_subscriber_t, shmbus_subscriber_close> h_;
};

// ---------------------------------------------------------------------------
// Journaled buses

/// The publisher of a journaled bus of T: each message is appended to the
/// journal, then published.
template <class T = Bytes>
class JournalPublisher {
    static_assert(detail::message_type<T>());

public:
    /// An empty handle.
    JournalPublisher() noexcept = default;
    /// Creates the journaled bus `name` with its journal at `journal_path`
    /// (an existing journal is continued).
    static JournalPublisher create(const std::string &name, shmbus_bus_options_t opts,
                                   const std::string &journal_path) {
        std::string type = detail::name_of<T>();
        shmbus_bus_options_t o = detail::typed_bus<T>(opts, type);
        shmbus_journal_options_t j{};
        j.path = journal_path.c_str();
        shmbus_journal_publisher_t *h = nullptr;
        detail::check(shmbus_journal_publisher_create(name.c_str(), &o, &j, &h));
        return JournalPublisher(h);
    }
    /// Becomes the publisher of the existing journaled bus `name`.
    static JournalPublisher attach(const std::string &name, shmbus_open_options_t opts = open_options()) {
        std::string type = detail::name_of<T>();
        shmbus_open_options_t o = detail::typed_open<T>(opts, type);
        shmbus_journal_publisher_t *h = nullptr;
        detail::check(shmbus_journal_publisher_attach(name.c_str(), &o, &h));
        return JournalPublisher(h);
    }
    /// Journals then publishes `v`; returns its sequence.
    template <class U = T, std::enable_if_t<!detail::is_bytes<U>, int> = 0>
    std::uint64_t publish(const T &v) {
        return publish_bytes(&v, sizeof v);
    }
    /// Journals then publishes the bytes; returns its sequence.
    template <class U = T, std::enable_if_t<detail::is_bytes<U>, int> = 0>
    std::uint64_t publish(Input in) {
        return publish_bytes(in.data, in.size);
    }
    /// Makes everything published so far durable (fdatasync).
    void flush() { detail::check(shmbus_journal_publisher_flush(h_.get())); }
    /// Stops publishing now; throws if a compaction under way failed (the
    /// destructor closes too, ignoring that status).
    void close() {
        auto *h = h_.release();
        if (h) detail::check(shmbus_journal_publisher_close(h));
    }
    /// The bus's message size.
    std::size_t msg_size() const {
        std::size_t n = 0;
        detail::check(shmbus_journal_publisher_msg_size(h_.get(), &n));
        return n;
    }
    /// Whether this handle holds a publisher.
    bool valid() const noexcept { return h_.get() != nullptr; }

private:
    explicit JournalPublisher(shmbus_journal_publisher_t *h) noexcept : h_(h) {}
    std::uint64_t publish_bytes(const void *d, std::size_t n) {
        std::uint64_t seq = 0;
        detail::check(shmbus_journal_publisher_publish(h_.get(), d, n, &seq));
        return seq;
    }
    detail::Handle<shmbus_journal_publisher_t, detail::close_journal_publisher> h_;
};

/// A subscriber of a journaled bus that starts with its journal: every
/// sequence once, in order.
template <class T = Bytes>
class JournalSubscriber {
    static_assert(detail::message_type<T>());

public:
    /// An empty handle.
    JournalSubscriber() noexcept = default;
    /// Joins the journaled bus `name` (waits for the publisher's flush).
    static JournalSubscriber join(const std::string &name, shmbus_open_options_t opts = open_options()) {
        std::string type = detail::name_of<T>();
        shmbus_open_options_t o = detail::typed_open<T>(opts, type);
        shmbus_journal_subscriber_t *h = nullptr;
        detail::check(shmbus_journal_subscriber_join(name.c_str(), &o, &h));
        JournalSubscriber s(h);
        detail::check(shmbus_journal_subscriber_msg_size(h, &s.size_));
        return s;
    }
    /// The next message with its sequence, or a lag (what neither ring
    /// nor journal still had), waiting at most `timeout`; nullopt if none.
    std::optional<std::variant<Sequenced<value_of<T>>, Lagged>> recv_for(Timeout timeout = forever) {
        auto r = try_recv(timeout);
        if (r.ok()) return std::variant<Sequenced<value_of<T>>, Lagged>(std::move(r.value()));
        if (r.lagged()) return std::variant<Sequenced<value_of<T>>, Lagged>(Lagged{r.skipped()});
        if (r.timed_out() || r.empty()) return std::nullopt;
        r.throw_if_failed();
        return std::nullopt;
    }
    /// As recv_for, noexcept (a raw receive allocates its vector: it
    /// reports Status::Error with ErrorCode::Other if that fails).
    Result<Sequenced<value_of<T>>> try_recv(Timeout timeout = no_wait) noexcept {
        Sequenced<value_of<T>> m{0, {}};
        void *buf;
        std::size_t len;
        if constexpr (detail::is_bytes<T>) {
            try {
                m.value.resize(size_);
            } catch (...) {
                return {Status::Error};
            }
            buf = m.value.data();
            len = m.value.size();
        } else {
            buf = &m.value;
            len = sizeof(T);
        }
        std::uint64_t skipped = 0;
        auto st = static_cast<Status>(
            shmbus_journal_subscriber_recv(h_.get(), buf, &len, &m.seq, &skipped, detail::ns(timeout)));
        return {st, std::move(m), skipped};
    }
    /// The sequence delivered next, and whether it has caught up with the ring.
    std::pair<std::uint64_t, bool> position() const {
        std::uint64_t s = 0;
        bool live = false;
        detail::check(shmbus_journal_subscriber_position(h_.get(), &s, &live));
        return {s, live};
    }
    /// The bus's message size.
    std::size_t msg_size() const noexcept { return size_; }
    /// Whether this handle holds a subscriber.
    bool valid() const noexcept { return h_.get() != nullptr; }

private:
    explicit JournalSubscriber(shmbus_journal_subscriber_t *h) noexcept : h_(h) {}
    detail::Handle<shmbus_journal_subscriber_t, shmbus_journal_subscriber_close> h_;
    std::size_t size_ = 0;
};

/// The keyed state of a journaled bus: the last value of each key (a
/// message's first 8 bytes, little-endian), folded from the journal, then
/// live; it joins again by itself after a loss the journal could not repair.
class State {
public:
    /// An empty handle.
    State() noexcept = default;
    /// Joins the journaled bus `name`; folds nothing yet (poll, wait_for).
    static State join(const std::string &name, shmbus_open_options_t opts = open_options()) {
        shmbus_state_t *h = nullptr;
        detail::check(shmbus_state_join(name.c_str(), &opts, &h));
        State st(h);
        detail::check(shmbus_state_msg_size(h, &st.size_));
        return st;
    }
    /// Folds in every message there now, without waiting; how many it took.
    std::size_t poll() {
        std::size_t n = 0;
        detail::check(shmbus_state_poll(h_.get(), &n));
        return n;
    }
    /// Folds in messages until sequence `seq` is in, waiting at most
    /// `timeout`; false if it is not in yet.
    bool wait_for(std::uint64_t seq, Timeout timeout = forever) {
        auto st = shmbus_state_wait_for(h_.get(), seq, detail::ns(timeout));
        if (st == SHMBUS_EMPTY || st == SHMBUS_TIMED_OUT) return false;
        detail::check(st);
        return true;
    }
    /// The last value of `key` (the whole message), or nullopt if none yet.
    std::optional<std::vector<std::byte>> get(std::uint64_t key) const {
        std::vector<std::byte> v(size_);
        std::size_t len = v.size();
        auto st = shmbus_state_get(h_.get(), key, v.data(), &len);
        if (st == SHMBUS_EMPTY) return std::nullopt;
        detail::check(st);
        v.resize(len);
        return v;
    }
    /// The keys folded so far, ascending.
    std::vector<std::uint64_t> keys() const {
        std::vector<std::uint64_t> k(len());
        for (;;) {
            std::size_t n = k.size();
            auto st = shmbus_state_keys(h_.get(), k.data(), &n);
            if (st == SHMBUS_OK) {
                k.resize(n);
                return k;
            }
            if (st != SHMBUS_TOO_SMALL) detail::raise(st);
            k.resize(n);
        }
    }
    /// How many keys it holds.
    std::size_t len() const {
        std::size_t n = 0;
        detail::check(shmbus_state_len(h_.get(), &n));
        return n;
    }
    /// The sequence of the last message folded in, or nullopt before any.
    std::optional<std::uint64_t> last_seq() const {
        std::uint64_t seq = 0;
        auto st = shmbus_state_last_seq(h_.get(), &seq);
        if (st == SHMBUS_EMPTY) return std::nullopt;
        detail::check(st);
        return seq;
    }
    /// How many times it joined again after an unrepairable loss.
    std::uint64_t rejoins() const {
        std::uint64_t n = 0;
        detail::check(shmbus_state_rejoins(h_.get(), &n));
        return n;
    }
    /// The bus's message size (every value's length).
    std::size_t msg_size() const noexcept { return size_; }
    /// Whether this handle holds a state.
    bool valid() const noexcept { return h_.get() != nullptr; }

private:
    explicit State(shmbus_state_t *h) noexcept : h_(h) {}
    detail::Handle<shmbus_state_t, shmbus_state_close> h_;
    std::size_t size_ = 0;
};

// ---------------------------------------------------------------------------
// Pool buses: written and read in place

/// A pool block loaned to a publisher: write the message into it, then
/// publish() it; destroyed unpublished, the block goes back (discard).
template <class T = Bytes>
class Loan {
public:
    /// An empty loan.
    Loan() noexcept = default;
    Loan(const Loan &) = delete;
    Loan &operator=(const Loan &) = delete;
    /// Takes the loan from `o` (left empty).
    Loan(Loan &&o) noexcept
        : l_(std::exchange(o.l_, nullptr)), data_(std::exchange(o.data_, nullptr)), size_(o.size_) {}
    /// Discards this loan, then takes `o`'s.
    Loan &operator=(Loan &&o) noexcept {
        if (this != &o) {
            shmbus_loan_discard(l_);
            l_ = std::exchange(o.l_, nullptr);
            data_ = std::exchange(o.data_, nullptr);
            size_ = o.size_;
        }
        return *this;
    }
    /// Gives the block back unpublished (if not published).
    ~Loan() { shmbus_loan_discard(l_); }
    /// The block's bytes to write (64-byte aligned; they hold whatever the
    /// block held before: write them all).
    std::byte *data() noexcept { return static_cast<std::byte *>(data_); }
    /// How many bytes the message has.
    std::size_t size() const noexcept { return size_; }
#if defined(__cpp_lib_span)
    /// The block's bytes as a span (C++20).
    std::span<std::byte> span() noexcept { return {data(), size_}; }
#endif
    /// Typed: the message in the block, to fill in.
    template <class U = T, std::enable_if_t<!detail::is_bytes<U>, int> = 0>
    U &value() noexcept {
        return *std::launder(static_cast<U *>(data_));
    }
    /// Typed: the message's members.
    template <class U = T, std::enable_if_t<!detail::is_bytes<U>, int> = 0>
    U *operator->() noexcept {
        return &value();
    }
    /// Raw: publishes only the first `len` bytes.
    void truncate(std::size_t len) {
        detail::check(shmbus_loan_truncate(l_, len));
        size_ = len;
    }
    /// Publishes the message; returns its sequence. The loan is spent
    /// whatever happens (Abandoned on a many-publisher bus that skipped it).
    std::uint64_t publish() {
        std::uint64_t seq = 0;
        auto st = shmbus_loan_publish(std::exchange(l_, nullptr), &seq);
        data_ = nullptr;
        detail::check(st);
        return seq;
    }
    /// As publish, noexcept.
    Result<std::uint64_t> try_publish() noexcept {
        std::uint64_t seq = 0;
        auto st = static_cast<Status>(shmbus_loan_publish(std::exchange(l_, nullptr), &seq));
        data_ = nullptr;
        return {st, seq};
    }
    /// Gives the block back unpublished now.
    void discard() noexcept {
        shmbus_loan_discard(std::exchange(l_, nullptr));
        data_ = nullptr;
    }
    /// Whether this holds a loan.
    bool valid() const noexcept { return l_ != nullptr; }

private:
    template <class>
    friend class PoolPublisher;
    Loan(shmbus_loan_t *l, void *d, std::size_t n) noexcept : l_(l), data_(d), size_(n) {
        if constexpr (!detail::is_bytes<T>) ::new (d) T; // begins T's lifetime; trivial: no write
    }
    shmbus_loan_t *l_ = nullptr;
    void *data_ = nullptr;
    std::size_t size_ = 0;
};

/// A publisher of a pool bus of T (Bytes: messages of any length up to a block).
template <class T = Bytes>
class PoolPublisher {
    static_assert(detail::message_type<T>());

public:
    /// An empty handle.
    PoolPublisher() noexcept = default;
    /// Creates the pool bus `name` (pool_options()) and becomes its
    /// publisher; `many`: a pool any number of publishers share.
    static PoolPublisher create(const std::string &name, shmbus_bus_options_t opts, bool many = false) {
        std::string type = detail::name_of<T>();
        shmbus_bus_options_t o = detail::typed_bus<T>(opts, type);
        shmbus_pool_publisher_t *h = nullptr;
        detail::check(many ? shmbus_pool_publisher_create_many(name.c_str(), &o, &h)
                           : shmbus_pool_publisher_create(name.c_str(), &o, &h));
        return PoolPublisher(h);
    }
    /// Becomes the publisher (`many`: one more publisher) of the pool bus `name`.
    static PoolPublisher attach(const std::string &name, shmbus_open_options_t opts = open_options(),
                                bool many = false) {
        std::string type = detail::name_of<T>();
        shmbus_open_options_t o = detail::typed_open<T>(opts, type);
        shmbus_pool_publisher_t *h = nullptr;
        detail::check(many ? shmbus_pool_publisher_attach_many(name.c_str(), &o, &h)
                           : shmbus_pool_publisher_attach(name.c_str(), &o, &h));
        return PoolPublisher(h);
    }
    /// Loans a block for one T (typed) or `len` bytes (raw), waiting at most
    /// `timeout` for one to come free (PoolExhausted otherwise). One loan
    /// at a time per publisher.
    Loan<T> loan(std::size_t len = detail::is_bytes<T> ? 0 : sizeof(T), Timeout timeout = forever) {
        auto r = try_loan(len, timeout);
        if (!r.ok()) r.throw_if_failed();
        return std::move(r.value());
    }
    /// As loan, noexcept: Full (timeout 0) and TimedOut are values.
    Result<Loan<T>> try_loan(std::size_t len = detail::is_bytes<T> ? 0 : sizeof(T),
                             Timeout timeout = no_wait) noexcept {
        if constexpr (!detail::is_bytes<T>) len = sizeof(T);
        shmbus_loan_t *l = nullptr;
        void *d = nullptr;
        auto st = static_cast<Status>(shmbus_pool_publisher_loan(h_.get(), len, detail::ns(timeout), &l, &d));
        if (st != Status::Ok) return {st};
        return {st, Loan<T>(l, d, len)};
    }
    /// Typed: loans a block, copies `v` in and publishes it; returns its sequence.
    template <class U = T, std::enable_if_t<!detail::is_bytes<U>, int> = 0>
    std::uint64_t publish(const T &v, Timeout timeout = forever) {
        Loan<T> l = loan(sizeof(U), timeout);
        l.value() = v;
        return l.publish();
    }
    /// Raw: loans a block, copies the bytes in and publishes them.
    template <class U = T, std::enable_if_t<detail::is_bytes<U>, int> = 0>
    std::uint64_t publish(Input in, Timeout timeout = forever) {
        Loan<T> l = loan(in.size, timeout);
        if (in.size) std::memcpy(l.data(), in.data, in.size);
        return l.publish();
    }
    /// The pool's block size (the longest message).
    std::size_t block_size() const {
        std::size_t n = 0;
        detail::check(shmbus_pool_publisher_block_size(h_.get(), &n));
        return n;
    }
    /// Whether this handle holds a publisher.
    bool valid() const noexcept { return h_.get() != nullptr; }

private:
    explicit PoolPublisher(shmbus_pool_publisher_t *h) noexcept : h_(h) {}
    detail::Handle<shmbus_pool_publisher_t, shmbus_pool_publisher_close> h_;
};

/// One received message of a pool bus, held in place in shared memory: a
/// const view valid until this Sample is destroyed (or release()d); it may
/// outlive its subscriber.
template <class T = Bytes>
class Sample {
public:
    /// An empty sample.
    Sample() noexcept = default;
    /// The message's bytes (read-only; valid while this Sample lives).
    View view() const noexcept { return {static_cast<const std::byte *>(data_), size_}; }
    /// The first byte.
    const std::byte *data() const noexcept { return static_cast<const std::byte *>(data_); }
    /// How many bytes.
    std::size_t size() const noexcept { return size_; }
#if defined(__cpp_lib_span)
    /// The bytes as a span (C++20; valid while this Sample lives).
    std::span<const std::byte> span() const noexcept { return {data(), size_}; }
#endif
    /// Its sequence number.
    std::uint64_t seq() const noexcept { return seq_; }
    /// Typed: the message, in place (valid while this Sample lives).
    template <class U = T, std::enable_if_t<!detail::is_bytes<U>, int> = 0>
    const U &value() const noexcept {
        return *static_cast<const U *>(data_);
    }
    /// Typed: the message's members.
    template <class U = T, std::enable_if_t<!detail::is_bytes<U>, int> = 0>
    const U *operator->() const noexcept {
        return &value();
    }
    /// Lets the block go now (the view dies).
    void release() noexcept {
        h_.reset();
        data_ = nullptr;
        size_ = 0;
    }
    /// Whether this holds a sample.
    bool valid() const noexcept { return h_.get() != nullptr; }

private:
    template <class>
    friend class PoolSubscriber;
    explicit Sample(shmbus_sample_t *s) noexcept : h_(s) {
        if (shmbus_sample_data(s, &data_, &size_, &seq_) != SHMBUS_OK) {
            data_ = nullptr;
            size_ = 0;
        }
    }
    detail::Handle<shmbus_sample_t, shmbus_sample_release> h_;
    const void *data_ = nullptr;
    std::size_t size_ = 0;
    std::uint64_t seq_ = 0;
};

/// A subscriber of a pool bus of T: messages read in place (Sample).
template <class T = Bytes>
class PoolSubscriber {
    static_assert(detail::message_type<T>());

public:
    /// An empty handle.
    PoolSubscriber() noexcept = default;
    /// Opens the pool bus `name`; a typed handle checks the blocks' type.
    static PoolSubscriber open(const std::string &name, shmbus_open_options_t opts = open_options()) {
        std::string type = detail::name_of<T>();
        shmbus_open_options_t o = detail::typed_open<T>(opts, type);
        shmbus_pool_subscriber_t *h = nullptr;
        detail::check(shmbus_pool_subscriber_open(name.c_str(), &o, &h));
        return PoolSubscriber(h);
    }
    /// Opens the pool bus `name`, starting where `start` says.
    static PoolSubscriber open(const std::string &name, Start start) { return open(name, open_options(start)); }
    /// The next sample or lag, waiting as long as it takes.
    Received<Sample<T>> recv() { return std::move(*recv_for(forever)); }
    /// The next sample or lag, waiting at most `timeout`; nullopt if none
    /// came. TooManySamples if this subscriber holds SHMBUS_POOL_MAX_HELD.
    std::optional<Received<Sample<T>>> recv_for(Timeout timeout) {
        auto r = try_recv(timeout);
        if (r.ok()) return Received<Sample<T>>(std::move(r.value()));
        if (r.lagged()) return Received<Sample<T>>(Lagged{r.skipped()});
        if (r.timed_out() || r.empty()) return std::nullopt;
        r.throw_if_failed();
        return std::nullopt;
    }
    /// As recv_for, noexcept: Full (too many samples held) is a value.
    Result<Sample<T>> try_recv(Timeout timeout = no_wait) noexcept {
        shmbus_sample_t *s = nullptr;
        std::uint64_t skipped = 0;
        auto st = static_cast<Status>(shmbus_pool_subscriber_recv(h_.get(), &s, &skipped, detail::ns(timeout)));
        if (st != Status::Message) return {st, Sample<T>(), skipped};
        return {st, Sample<T>(s), 0};
    }
    /// Whether this handle holds a subscriber.
    bool valid() const noexcept { return h_.get() != nullptr; }

private:
    explicit PoolSubscriber(shmbus_pool_subscriber_t *h) noexcept : h_(h) {}
    detail::Handle<shmbus_pool_subscriber_t, shmbus_pool_subscriber_close> h_;
};

// ---------------------------------------------------------------------------
// Streams: lossless records, one producer and one consumer

/// Stream options with every default and `capacity` bytes of ring.
inline shmbus_stream_options_t stream_options(std::uint64_t capacity) noexcept {
    shmbus_stream_options_t o = shmbus_stream_options_default();
    o.capacity = capacity;
    return o;
}

/// The producer of a stream of T records (Bytes: records of any length up
/// to max_record()). Records are never lost: a full stream waits.
template <class T = Bytes>
class Producer {
    static_assert(detail::message_type<T>());

public:
    /// An empty handle.
    Producer() noexcept = default;
    /// Creates the stream `name` (stream_options()) and becomes its producer.
    static Producer create(const std::string &name, shmbus_stream_options_t opts) {
        std::string type = detail::name_of<T>();
        if constexpr (!detail::is_bytes<T>) {
            opts.type_name = type.c_str();
            opts.type_align = static_cast<std::uint32_t>(alignof(T));
        }
        shmbus_producer_t *h = nullptr;
        detail::check(shmbus_producer_create(name.c_str(), &opts, &h));
        return Producer(h);
    }
    /// Becomes the producer of the existing stream `name`.
    static Producer attach(const std::string &name, shmbus_open_options_t opts = open_options()) {
        std::string type = detail::name_of<T>();
        shmbus_open_options_t o = detail::typed_open<T>(opts, type);
        shmbus_producer_t *h = nullptr;
        detail::check(shmbus_producer_attach(name.c_str(), &o, &h));
        return Producer(h);
    }
    /// Appends `v`, waiting for room as long as it takes (PeerGone: the
    /// consumer died and the stream is full).
    template <class U = T, std::enable_if_t<!detail::is_bytes<U>, int> = 0>
    void push(const T &v) {
        detail::check(shmbus_producer_push(h_.get(), &v, sizeof v, -1));
    }
    /// Appends the bytes as one record, waiting for room as long as it takes.
    template <class U = T, std::enable_if_t<detail::is_bytes<U>, int> = 0>
    void push(Input in) {
        detail::check(shmbus_producer_push(h_.get(), in.data, in.size, -1));
    }
    /// Appends, waiting at most `timeout`, noexcept: Full, TimedOut, PeerGone are values.
    template <class U = T, std::enable_if_t<!detail::is_bytes<U>, int> = 0>
    Result<std::monostate> try_push(const T &v, Timeout timeout = no_wait) noexcept {
        return {static_cast<Status>(shmbus_producer_push(h_.get(), &v, sizeof v, detail::ns(timeout)))};
    }
    /// As the typed try_push, for raw bytes.
    template <class U = T, std::enable_if_t<detail::is_bytes<U>, int> = 0>
    Result<std::monostate> try_push(Input in, Timeout timeout = no_wait) noexcept {
        return {static_cast<Status>(shmbus_producer_push(h_.get(), in.data, in.size, detail::ns(timeout)))};
    }
    /// The largest record the stream carries.
    std::size_t max_record() const {
        std::size_t n = 0;
        detail::check(shmbus_producer_max_record(h_.get(), &n));
        return n;
    }
    /// Whether this handle holds a producer.
    bool valid() const noexcept { return h_.get() != nullptr; }

private:
    explicit Producer(shmbus_producer_t *h) noexcept : h_(h) {}
    detail::Handle<shmbus_producer_t, shmbus_producer_close> h_;
};

/// The next record of a stream read in place: a const view valid until this
/// Chunk is destroyed or release()d, which consumes the record. A Chunk must
/// not outlive its Consumer, and a consumer has one Chunk at a time.
class Chunk {
public:
    /// An empty chunk.
    Chunk() noexcept = default;
    Chunk(const Chunk &) = delete;
    Chunk &operator=(const Chunk &) = delete;
    /// Takes `o`'s record (o is left empty).
    Chunk(Chunk &&o) noexcept : c_(std::exchange(o.c_, nullptr)), view_(o.view_) {}
    /// Releases this record, then takes `o`'s.
    Chunk &operator=(Chunk &&o) noexcept {
        if (this != &o) {
            (void)try_release();
            c_ = std::exchange(o.c_, nullptr);
            view_ = o.view_;
        }
        return *this;
    }
    /// Consumes the record (if not released yet).
    ~Chunk() { (void)try_release(); }
    /// The record's bytes in the stream (read-only; valid while this Chunk holds it).
    View view() const noexcept { return view_; }
    /// The first byte.
    const std::byte *data() const noexcept { return view_.data; }
    /// How many bytes.
    std::size_t size() const noexcept { return view_.size; }
#if defined(__cpp_lib_span)
    /// The bytes as a span (C++20).
    std::span<const std::byte> span() const noexcept { return view_.span(); }
#endif
    /// Consumes the record now (its bytes go back to the producer).
    void release() {
        shmbus_consumer_t *c = std::exchange(c_, nullptr);
        if (c) detail::check(shmbus_consumer_release(c));
    }
    /// As release, noexcept.
    Status try_release() noexcept {
        shmbus_consumer_t *c = std::exchange(c_, nullptr);
        return c ? static_cast<Status>(shmbus_consumer_release(c)) : Status::Ok;
    }
    /// Whether this holds a record.
    bool valid() const noexcept { return c_ != nullptr; }

private:
    template <class>
    friend class Consumer;
    Chunk(shmbus_consumer_t *c, View v) noexcept : c_(c), view_(v) {}
    shmbus_consumer_t *c_ = nullptr;
    View view_{};
};

/// The consumer of a stream of T records (one at a time; it carries on
/// where the last one stopped).
template <class T = Bytes>
class Consumer {
    static_assert(detail::message_type<T>());

public:
    /// An empty handle.
    Consumer() noexcept = default;
    /// Opens the stream `name` as its consumer; a typed handle checks its type.
    static Consumer open(const std::string &name, shmbus_open_options_t opts = open_options()) {
        std::string type = detail::name_of<T>();
        shmbus_open_options_t o = detail::typed_open<T>(opts, type);
        shmbus_consumer_t *h = nullptr;
        detail::check(shmbus_consumer_open(name.c_str(), &o, &h));
        Consumer c(h);
        detail::check(shmbus_consumer_max_record(h, &c.max_));
        return c;
    }
    /// Pops the next record, waiting at most `timeout`; nullopt if none came.
    /// PeerGone: the producer died and nothing is left.
    std::optional<value_of<T>> pop(Timeout timeout = forever) {
        auto r = try_pop(timeout);
        if (r.ok()) return std::move(r.value());
        if (r.timed_out() || r.empty()) return std::nullopt;
        r.throw_if_failed();
        return std::nullopt;
    }
    /// As pop, noexcept (a raw pop allocates: Status::Error if that fails).
    Result<value_of<T>> try_pop(Timeout timeout = no_wait) noexcept {
        value_of<T> v{};
        void *buf;
        std::size_t len;
        if constexpr (detail::is_bytes<T>) {
            try {
                v.resize(max_);
            } catch (...) {
                return {Status::Error};
            }
            buf = v.data();
            len = v.size();
        } else {
            buf = &v;
            len = sizeof(T);
        }
        auto st = static_cast<Status>(shmbus_consumer_pop(h_.get(), buf, &len, detail::ns(timeout)));
        if constexpr (detail::is_bytes<T>)
            if (st == Status::Message) v.resize(len);
        return {st, std::move(v)};
    }
    /// The next record in place, waiting at most `timeout`; nullopt if none
    /// came. The Chunk consumes it when it goes.
    std::optional<Chunk> peek(Timeout timeout = forever) {
        auto r = try_peek(timeout);
        if (r.ok()) return std::move(r.value());
        if (r.timed_out() || r.empty()) return std::nullopt;
        r.throw_if_failed();
        return std::nullopt;
    }
    /// As peek, noexcept.
    Result<Chunk> try_peek(Timeout timeout = no_wait) noexcept {
        const std::uint8_t *d = nullptr;
        std::size_t len = 0;
        auto st = static_cast<Status>(shmbus_consumer_peek(h_.get(), detail::ns(timeout), &d, &len));
        if (st != Status::Message) return {st};
        return {st, Chunk(h_.get(), View{reinterpret_cast<const std::byte *>(d), len})};
    }
    /// The largest record the stream carries.
    std::size_t max_record() const noexcept { return max_; }
    /// Whether this handle holds a consumer.
    bool valid() const noexcept { return h_.get() != nullptr; }

private:
    explicit Consumer(shmbus_consumer_t *h) noexcept : h_(h) {}
    detail::Handle<shmbus_consumer_t, shmbus_consumer_close> h_;
    std::size_t max_ = 0;
};

// ---------------------------------------------------------------------------
// Blackboards: the latest value per key

/// Blackboard options: room for `keys` keys (a typed writer sets the sizes).
inline shmbus_blackboard_options_t blackboard_options(std::uint64_t keys, std::uint32_t key_size = 0,
                                                      std::uint32_t value_size = 0) noexcept {
    shmbus_blackboard_options_t o = shmbus_blackboard_options_default();
    o.keys = keys;
    o.key_size = key_size;
    o.value_size = value_size;
    return o;
}

namespace detail {
template <class T>
struct Field {
    const void *data;
    std::size_t size;
};
template <class T>
Field<T> field(const T &v) noexcept {
    return {&v, sizeof v};
}
inline Field<Bytes> field(Input in) noexcept { return {in.data, in.size}; }
template <class K>
using key_arg = std::conditional_t<is_bytes<K>, Input, const K &>;

/// The entry visitor's C trampoline: calls the std::function in ctx.
using Visit = std::function<bool(View key, std::optional<View> value, std::uint64_t version)>;
inline int visit_tramp(void *ctx, const std::uint8_t *k, std::size_t kl, const std::uint8_t *v, std::size_t vl,
                       std::uint64_t ver) {
    auto *f = static_cast<Visit *>(ctx);
    std::optional<View> value;
    if (v) value = View{reinterpret_cast<const std::byte *>(v), vl};
    try {
        return (*f)(View{reinterpret_cast<const std::byte *>(k), kl}, value, ver) ? 0 : 1;
    } catch (...) {
        return 1; // must not unwind through C
    }
}
} // namespace detail

/// A writer's handle on one key: put and remove with no hash and no probe.
/// It may outlive neither the writer's table mapping nor be used with
/// another writer's table.
class BlackboardWriterEntry {
public:
    /// An empty handle.
    BlackboardWriterEntry() noexcept = default;
    /// Whether this holds an entry.
    bool valid() const noexcept { return h_.get() != nullptr; }
    /// The C handle.
    shmbus_blackboard_entry_writer_t *c_handle() const noexcept { return h_.get(); }

private:
    template <class, class>
    friend class BlackboardWriter;
    explicit BlackboardWriterEntry(shmbus_blackboard_entry_writer_t *h) noexcept : h_(h) {}
    detail::Handle<shmbus_blackboard_entry_writer_t, shmbus_blackboard_entry_writer_close> h_;
};

/// The writer of a blackboard of keys K and values V (Bytes: raw keys and
/// values of the table's exact sizes).
template <class K = Bytes, class V = Bytes>
class BlackboardWriter {
    static_assert(detail::message_type<K>() && detail::message_type<V>());

public:
    /// An empty handle.
    BlackboardWriter() noexcept = default;
    /// Creates the blackboard `name` (blackboard_options()); typed K and V
    /// set the sizes and record their names.
    static BlackboardWriter create(const std::string &name, shmbus_blackboard_options_t opts) {
        std::string kn = detail::name_of<K>(), vn = detail::name_of<V>();
        if constexpr (!detail::is_bytes<K>) {
            opts.key_size = sizeof(K);
            opts.key_type = kn.c_str();
        }
        if constexpr (!detail::is_bytes<V>) {
            opts.value_size = sizeof(V);
            opts.value_type = vn.c_str();
            opts.type_align = alignof(V);
        }
        shmbus_blackboard_writer_t *h = nullptr;
        detail::check(shmbus_blackboard_writer_create(name.c_str(), &opts, &h));
        return BlackboardWriter(h);
    }
    /// Becomes the writer of the existing blackboard `name` (RoleTaken while one lives).
    static BlackboardWriter attach(const std::string &name, shmbus_open_options_t opts = open_options()) {
        std::string type = detail::name_of<V>();
        shmbus_open_options_t o = detail::typed_open<V>(opts, type);
        shmbus_blackboard_writer_t *h = nullptr;
        detail::check(shmbus_blackboard_writer_attach(name.c_str(), &o, &h));
        return BlackboardWriter(h);
    }
    /// Sets `key` to `value`; returns the write's version. Full: a new key
    /// and a full table.
    std::uint64_t put(detail::key_arg<K> key, detail::key_arg<V> value) {
        auto r = try_put(key, value);
        if (!r) r.throw_if_failed();
        return r.value();
    }
    /// As put, noexcept: Full is a value.
    Result<std::uint64_t> try_put(detail::key_arg<K> key, detail::key_arg<V> value) noexcept {
        auto k = detail::field(key);
        auto v = detail::field(value);
        std::uint64_t ver = 0;
        return {static_cast<Status>(shmbus_blackboard_writer_put(h_.get(), k.data, k.size, v.data, v.size, &ver)),
                ver};
    }
    /// Removes `key`; its version, or nullopt if it was not there.
    std::optional<std::uint64_t> remove(detail::key_arg<K> key) {
        auto k = detail::field(key);
        std::uint64_t ver = 0;
        auto st = shmbus_blackboard_writer_remove(h_.get(), k.data, k.size, &ver);
        if (st == SHMBUS_EMPTY) return std::nullopt;
        detail::check(st);
        return ver;
    }
    /// A handle on `key` (need not be in the table yet).
    BlackboardWriterEntry entry(detail::key_arg<K> key) {
        auto k = detail::field(key);
        shmbus_blackboard_entry_writer_t *e = nullptr;
        detail::check(shmbus_blackboard_writer_entry(h_.get(), k.data, k.size, &e));
        return BlackboardWriterEntry(e);
    }
    /// Sets the entry's key to `value`; returns the version.
    std::uint64_t put(BlackboardWriterEntry &entry, detail::key_arg<V> value) {
        auto v = detail::field(value);
        std::uint64_t ver = 0;
        detail::check(shmbus_blackboard_writer_put_entry(h_.get(), entry.c_handle(), v.data, v.size, &ver));
        return ver;
    }
    /// Removes the entry's key; its version, or nullopt if it was not there.
    std::optional<std::uint64_t> remove(BlackboardWriterEntry &entry) {
        std::uint64_t ver = 0;
        auto st = shmbus_blackboard_writer_remove_entry(h_.get(), entry.c_handle(), &ver);
        if (st == SHMBUS_EMPTY) return std::nullopt;
        detail::check(st);
        return ver;
    }
    /// Whether this handle holds a writer.
    bool valid() const noexcept { return h_.get() != nullptr; }

private:
    explicit BlackboardWriter(shmbus_blackboard_writer_t *h) noexcept : h_(h) {}
    detail::Handle<shmbus_blackboard_writer_t, shmbus_blackboard_writer_close> h_;
};

/// A reader's handle on one key of a blackboard of values V: a get through
/// it reads where the key was last found. It may outlive its reader.
template <class V = Bytes>
class BlackboardReaderEntry {
public:
    /// An empty handle.
    BlackboardReaderEntry() noexcept = default;
    /// The key's latest value and version, or nullopt if it is not there.
    std::optional<Versioned<value_of<V>>> get() {
        auto r = try_get();
        if (r.ok()) return std::move(r.value());
        if (r.empty()) return std::nullopt;
        r.throw_if_failed();
        return std::nullopt;
    }
    /// As get, noexcept: Empty (not there) is a value; Busy, Stuck are errors.
    Result<Versioned<value_of<V>>> try_get() noexcept {
        Versioned<value_of<V>> out{};
        void *buf;
        std::size_t len;
        if constexpr (detail::is_bytes<V>) {
            try {
                out.value.resize(size_);
            } catch (...) {
                return {Status::Error};
            }
            buf = out.value.data();
            len = out.value.size();
        } else {
            buf = &out.value;
            len = sizeof(V);
        }
        auto st = static_cast<Status>(shmbus_blackboard_entry_reader_get(h_.get(), buf, &len, &out.version));
        return {st, std::move(out)};
    }
    /// Whether this holds an entry.
    bool valid() const noexcept { return h_.get() != nullptr; }

private:
    template <class, class>
    friend class BlackboardReader;
    BlackboardReaderEntry(shmbus_blackboard_entry_reader_t *h, std::size_t size) noexcept : h_(h), size_(size) {}
    detail::Handle<shmbus_blackboard_entry_reader_t, shmbus_blackboard_entry_reader_close> h_;
    std::size_t size_ = 0;
};

/// A reader of a blackboard of keys K and values V (any number of readers).
/// Reads never tear and never wait for the writer.
template <class K = Bytes, class V = Bytes>
class BlackboardReader {
    static_assert(detail::message_type<K>() && detail::message_type<V>());

public:
    /// An empty handle.
    BlackboardReader() noexcept = default;
    /// Opens the blackboard `name`; typed V: refused (TypeMismatch) unless
    /// the table's values are sizeof(V) bytes, typed K unless its keys are
    /// sizeof(K).
    static BlackboardReader open(const std::string &name, shmbus_open_options_t opts = open_options()) {
        std::string type = detail::name_of<V>();
        shmbus_open_options_t o = detail::typed_open<V>(opts, type);
        shmbus_blackboard_reader_t *h = nullptr;
        detail::check(shmbus_blackboard_reader_open(name.c_str(), &o, &h));
        BlackboardReader r(h);
        detail::check(shmbus_blackboard_reader_sizes(h, &r.key_size_, &r.value_size_));
        if constexpr (!detail::is_bytes<K>) {
            if (r.key_size_ != sizeof(K))
                throw TypeMismatch(ErrorCode::TypeMismatch, Status::Error,
                                   "blackboard " + name + " holds keys of " + std::to_string(r.key_size_) +
                                       " bytes, expected " + detail::name_of<K>() + " of " +
                                       std::to_string(sizeof(K)) + " bytes");
        }
        return r;
    }
    /// The latest value of `key` and its version, or nullopt if not there.
    std::optional<Versioned<value_of<V>>> get(detail::key_arg<K> key) {
        auto r = try_get(key);
        if (r.ok()) return std::move(r.value());
        if (r.empty()) return std::nullopt;
        r.throw_if_failed();
        return std::nullopt;
    }
    /// As get, noexcept: Empty is a value; Busy and Stuck are failures.
    Result<Versioned<value_of<V>>> try_get(detail::key_arg<K> key) noexcept {
        auto k = detail::field(key);
        Versioned<value_of<V>> out{};
        void *buf;
        std::size_t len;
        if constexpr (detail::is_bytes<V>) {
            try {
                out.value.resize(value_size_);
            } catch (...) {
                return {Status::Error};
            }
            buf = out.value.data();
            len = out.value.size();
        } else {
            buf = &out.value;
            len = sizeof(V);
        }
        auto st = static_cast<Status>(
            shmbus_blackboard_reader_get(h_.get(), k.data, k.size, buf, &len, &out.version));
        return {st, std::move(out)};
    }
    /// Calls `visit(key, value, version)` for every live key, in table
    /// order, until it returns false. The views are valid only during the
    /// call, and it must not use this reader.
    void entries(const detail::Visit &visit) {
        detail::Visit f = visit;
        detail::check(shmbus_blackboard_reader_entries(h_.get(), detail::visit_tramp, &f));
    }
    /// Calls `visit` for every entry written after version `since` (a
    /// removed key with no value), until it returns false.
    void changed_since(std::uint64_t since, const detail::Visit &visit) {
        detail::Visit f = visit;
        detail::check(shmbus_blackboard_reader_changed_since(h_.get(), since, detail::visit_tramp, &f));
    }
    /// The table's version (the last written; 0 before any).
    std::uint64_t version() const {
        std::uint64_t v = 0;
        detail::check(shmbus_blackboard_reader_version(h_.get(), &v));
        return v;
    }
    /// Waits at most `timeout` for the table's version to pass `since`;
    /// the new version, or nullopt if it did not.
    std::optional<std::uint64_t> wait(std::uint64_t since, Timeout timeout = forever) {
        std::uint64_t v = 0;
        auto st = shmbus_blackboard_reader_wait(h_.get(), since, detail::ns(timeout), &v);
        if (st == SHMBUS_EMPTY || st == SHMBUS_TIMED_OUT) return std::nullopt;
        detail::check(st);
        return v;
    }
    /// A handle on `key` for repeated gets.
    BlackboardReaderEntry<V> entry(detail::key_arg<K> key) {
        auto k = detail::field(key);
        shmbus_blackboard_entry_reader_t *e = nullptr;
        detail::check(shmbus_blackboard_reader_entry(h_.get(), k.data, k.size, &e));
        return BlackboardReaderEntry<V>(e, value_size_);
    }
    /// Every key's size in bytes.
    std::size_t key_size() const noexcept { return key_size_; }
    /// Every value's size in bytes.
    std::size_t value_size() const noexcept { return value_size_; }
    /// Whether this handle holds a reader.
    bool valid() const noexcept { return h_.get() != nullptr; }

private:
    explicit BlackboardReader(shmbus_blackboard_reader_t *h) noexcept : h_(h) {}
    detail::Handle<shmbus_blackboard_reader_t, shmbus_blackboard_reader_close> h_;
    std::size_t key_size_ = 0, value_size_ = 0;
};

// ---------------------------------------------------------------------------
// Request-response

/// Service options: the largest request and response in bytes.
inline shmbus_service_options_t service_options(std::uint32_t request_size, std::uint32_t response_size) noexcept {
    shmbus_service_options_t o = shmbus_service_options_default();
    o.request_size = request_size;
    o.response_size = response_size;
    return o;
}

/// A request a server took: its bytes in shared memory (a const view valid
/// until it is answered or refused). Destroyed unanswered, it is refused.
class Request {
public:
    /// An empty request.
    Request() noexcept = default;
    Request(const Request &) = delete;
    Request &operator=(const Request &) = delete;
    /// Takes `o`'s request (o is left empty).
    Request(Request &&o) noexcept
        : r_(std::exchange(o.r_, nullptr)), view_(o.view_), client_(o.client_) {}
    /// Refuses this request (if unanswered), then takes `o`'s.
    Request &operator=(Request &&o) noexcept {
        if (this != &o) {
            refuse();
            r_ = std::exchange(o.r_, nullptr);
            view_ = o.view_;
            client_ = o.client_;
        }
        return *this;
    }
    /// Refuses the request if it was not answered.
    ~Request() { refuse(); }
    /// The request's bytes (read-only; valid until answered or refused).
    View data() const noexcept { return view_; }
    /// The client entry that sent it.
    std::uint32_t client() const noexcept { return client_; }
    /// Answers with the bytes: true if delivered, false if the caller gave
    /// up first (the response dropped). TooLong: nothing sent, still yours.
    bool respond(Input response) {
        auto st = shmbus_request_respond(r_, response.data, response.size);
        if (st == SHMBUS_OK || st == SHMBUS_TIMED_OUT) {
            r_ = nullptr;
            return st == SHMBUS_OK;
        }
        detail::raise(st);
    }
    /// As respond, noexcept: Ok, TimedOut (the caller gave up) or a failure.
    Status try_respond(Input response) noexcept {
        auto st = static_cast<Status>(shmbus_request_respond(r_, response.data, response.size));
        if (st == Status::Ok || st == Status::TimedOut) r_ = nullptr;
        return st;
    }
    /// Refuses the request (its caller gets Refused).
    void refuse() noexcept {
        shmbus_request_refuse(std::exchange(r_, nullptr));
    }
    /// Whether this holds an unanswered request.
    bool valid() const noexcept { return r_ != nullptr; }

private:
    friend class Server;
    explicit Request(shmbus_request_t *r) noexcept : r_(r) {
        const void *d = nullptr;
        if (shmbus_request_data(r, &d, &view_.size, &client_) == SHMBUS_OK)
            view_.data = static_cast<const std::byte *>(d);
    }
    shmbus_request_t *r_ = nullptr;
    View view_{};
    std::uint32_t client_ = 0;
};

/// A server of a request-response service.
class Server {
public:
    /// An empty handle.
    Server() noexcept = default;
    /// Creates the service `name` (service_options()) and serves it.
    static Server create(const std::string &name, const shmbus_service_options_t &opts) {
        shmbus_server_t *h = nullptr;
        detail::check(shmbus_server_create(name.c_str(), &opts, &h));
        return Server(h);
    }
    /// Serves the existing service `name` beside its other servers.
    static Server attach(const std::string &name, shmbus_open_options_t opts = open_options()) {
        shmbus_server_t *h = nullptr;
        detail::check(shmbus_server_attach(name.c_str(), &opts, &h));
        return Server(h);
    }
    /// The next request, waiting at most `timeout`; nullopt if none came.
    std::optional<Request> recv(Timeout timeout = forever) {
        auto r = try_recv(timeout);
        if (r.ok()) return std::move(r.value());
        if (r.empty() || r.timed_out()) return std::nullopt;
        r.throw_if_failed();
        return std::nullopt;
    }
    /// As recv, noexcept.
    Result<Request> try_recv(Timeout timeout = no_wait) noexcept {
        shmbus_request_t *r = nullptr;
        auto st = static_cast<Status>(shmbus_server_recv(h_.get(), &r, detail::ns(timeout)));
        if (st != Status::Message) return {st};
        return {st, Request(r)};
    }
    /// The largest request the service carries.
    std::size_t max_request() const {
        std::size_t n = 0;
        detail::check(shmbus_server_max_request(h_.get(), &n));
        return n;
    }
    /// The largest response the service carries.
    std::size_t max_response() const {
        std::size_t n = 0;
        detail::check(shmbus_server_max_response(h_.get(), &n));
        return n;
    }
    /// Whether this handle holds a server.
    bool valid() const noexcept { return h_.get() != nullptr; }

private:
    explicit Server(shmbus_server_t *h) noexcept : h_(h) {}
    detail::Handle<shmbus_server_t, shmbus_server_close> h_;
};

/// A client of a request-response service. The outcomes of a call beyond a
/// response are exceptions in call()/wait() (TimedOut, PeerGone when the
/// server died, Refused, NoServer) and statuses in try_call()/try_wait().
class Client {
public:
    /// An empty handle.
    Client() noexcept = default;
    /// Becomes a client of the service `name`.
    static Client attach(const std::string &name, shmbus_open_options_t opts = open_options()) {
        shmbus_client_t *h = nullptr;
        detail::check(shmbus_client_attach(name.c_str(), &opts, &h));
        return Client(h);
    }
    /// Sends the request (waiting at most `timeout` for a free call slot),
    /// then waits at most `timeout` for the response: send() then wait().
    std::vector<std::byte> call(Input request, Timeout timeout = forever) {
        return wait(send(request, timeout), timeout);
    }
    /// Sends the request (waiting at most `timeout` for a free call slot:
    /// Full otherwise); the call's id, for wait().
    std::uint64_t send(Input request, Timeout timeout = forever) {
        std::uint64_t call = 0;
        detail::check(shmbus_client_send(h_.get(), request.data, request.size, &call, detail::ns(timeout)));
        return call;
    }
    /// Waits at most `timeout` for `call`'s response. Any other outcome
    /// ends the call and throws.
    std::vector<std::byte> wait(std::uint64_t call, Timeout timeout = forever) {
        std::vector<std::byte> buf(256);
        for (;;) {
            std::size_t len = buf.size();
            auto st = shmbus_client_wait(h_.get(), call, buf.data(), &len, detail::ns(timeout));
            if (st == SHMBUS_MESSAGE) {
                buf.resize(len);
                return buf;
            }
            if (st != SHMBUS_TOO_SMALL) detail::raise(st);
            buf.resize(len);
        }
    }
    /// Sends and waits into `buf` (its size the room), all within `timeout`
    /// (shmbus_client_call), noexcept: the
    /// response's length on Message; TimedOut, PeerGone, Refused, NoServer,
    /// Full, TooSmall (the length needed; the response is dropped) as values.
    Result<std::size_t> try_call(Input request, void *buf, std::size_t room, Timeout timeout = forever) noexcept {
        std::size_t len = room;
        auto st = static_cast<Status>(
            shmbus_client_call(h_.get(), request.data, request.size, buf, &len, nullptr, detail::ns(timeout)));
        return {st, len};
    }
    /// Waits into `buf` for `call`, noexcept: as try_call (on TooSmall the
    /// response is kept: wait again with the length given).
    Result<std::size_t> try_wait(std::uint64_t call, void *buf, std::size_t room, Timeout timeout = forever) noexcept {
        std::size_t len = room;
        auto st = static_cast<Status>(shmbus_client_wait(h_.get(), call, buf, &len, detail::ns(timeout)));
        return {st, len};
    }
    /// Gives up on `call` (a response that comes is dropped).
    void cancel(std::uint64_t call) { detail::check(shmbus_client_cancel(h_.get(), call)); }
    /// Whether `call` has its answer already.
    bool is_answered(std::uint64_t call) const {
        bool b = false;
        detail::check(shmbus_client_is_answered(h_.get(), call, &b));
        return b;
    }
    /// How many calls are outstanding.
    std::uint32_t outstanding() const {
        std::uint32_t n = 0;
        detail::check(shmbus_client_outstanding(h_.get(), &n));
        return n;
    }
    /// Whether this handle holds a client.
    bool valid() const noexcept { return h_.get() != nullptr; }

private:
    explicit Client(shmbus_client_t *h) noexcept : h_(h) {}
    detail::Handle<shmbus_client_t, shmbus_client_close> h_;
};

} // namespace shmbus

#endif // SHMBUS_HPP
