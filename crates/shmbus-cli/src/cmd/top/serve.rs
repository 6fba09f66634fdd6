//! `shmbus top --listen ADDR:PORT`: the `--prometheus` text served at
//! `/metrics` over HTTP, for a scraper (Prometheus, an agent, curl).
//!
//! The main thread samples every `--interval-ms` and keeps the latest
//! text; a scrape gets that text, so a scrape costs no sample and its
//! rates are over one interval. A sample that takes long (thousands of
//! buses) stretches the pause after it to [`PAUSE_PER_SAMPLE`] times its
//! time ([`pace`]): the process samples no more often than that work
//! allows, and says so (`shmbus_top_sample_seconds`,
//! `shmbus_top_interval_seconds`). Any other path is 404, a method other than
//! GET or HEAD 405, a request head that is not HTTP 400.
//!
//! Every client is untrusted, and bounded: each connection is served on a
//! thread of its own, at most [`MAX_CONNECTIONS`] at once, with one
//! deadline for the whole exchange ([`DEADLINE`]: reading the request and
//! writing the response), a request head of at most [`MAX_HEAD`] bytes
//! (431 past it) and one request per connection. A connection past the
//! limit takes the place of the oldest one still waiting for its request
//! (shut down: its thread ends at once); where every one is being
//! answered, it is closed unanswered. So a client that sends slowly, or
//! never, holds no slot a scrape needs, one that never reads holds one
//! thread for at most the deadline, and no client makes the process grow
//! past what these bounds allow. The request head is parsed by httparse.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::model::Sampler;
use super::prom;
use crate::error::CliError;

/// Connections served at once; one past that takes the place of the
/// oldest still waiting for its request, if any, else is closed unanswered.
pub const MAX_CONNECTIONS: usize = 64;

/// The longest request head read (request line and headers).
pub const MAX_HEAD: usize = 8 * 1024;

/// How long one connection may take, from its accept to its response's
/// last byte.
pub const DEADLINE: Duration = Duration::from_secs(2);

/// The content type of the text exposition format, version 0.0.4.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The latest exposition text, shared with the connections' threads.
type Latest = Arc<Mutex<Arc<str>>>;

/// Serves `/metrics` on `addr` until the process is ended.
pub fn run(addr: &str, mut sampler: Sampler, interval: Duration) -> Result<(), CliError> {
    let listener = TcpListener::bind(addr)
        .map_err(|e| CliError::usage(format!("--listen {addr}: cannot listen there: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| CliError::runtime(format!("--listen {addr}: {e}")))?;
    // The first text has no rates; a scrape before the next sample gets it
    // rather than waiting.
    sampler.sample();
    let (text, mut pause) = timed_sample(&mut sampler, interval);
    let latest: Latest = Arc::new(Mutex::new(text));
    {
        let mut out = crate::out::stdout()?;
        writeln!(out, "serving http://{bound}/metrics")
            .and_then(|()| out.flush())
            .map_err(CliError::stdout)?;
    }
    let shared = Arc::clone(&latest);
    std::thread::Builder::new()
        .name("metrics-accept".into())
        .spawn(move || accept(&listener, &shared))
        .map_err(|e| CliError::runtime(format!("--listen {bound}: no thread to accept on: {e}")))?;
    loop {
        std::thread::sleep(pause);
        let (text, next) = timed_sample(&mut sampler, interval);
        pause = next;
        *latest.lock().unwrap_or_else(PoisonError::into_inner) = text;
    }
}

/// The pause after a sample is at least this many times as long as the
/// sample took: sampling takes at most a fifth of the time (of one CPU),
/// however many buses there are.
pub const PAUSE_PER_SAMPLE: u32 = 4;

/// The pause after a sample that took `took`: `interval`, or
/// [`PAUSE_PER_SAMPLE`] times `took` where that is longer.
pub fn pace(interval: Duration, took: Duration) -> Duration {
    interval.max(took.saturating_mul(PAUSE_PER_SAMPLE))
}

/// One sample's text, with what it took and the pause before the next
/// (`shmbus_top_sample_seconds`, `shmbus_top_interval_seconds`), and that
/// pause.
fn timed_sample(sampler: &mut Sampler, interval: Duration) -> (Arc<str>, Duration) {
    let began = Instant::now();
    let snap = sampler.sample();
    let took = began.elapsed();
    let pause = pace(interval, took);
    let mut text = prom::exposition(&snap);
    text.push_str(&own_figures(took, pause));
    (Arc::from(text), pause)
}

/// `top --listen`'s own figures, in the exposition format.
fn own_figures(took: Duration, pause: Duration) -> String {
    format!(
        "# HELP shmbus_top_sample_seconds How long top's last sample of the buses took.\n\
         # TYPE shmbus_top_sample_seconds gauge\n\
         shmbus_top_sample_seconds {:.9}\n\
         # HELP shmbus_top_interval_seconds The pause after that sample: --interval-ms, \
         or {PAUSE_PER_SAMPLE} times the sample's time if longer.\n\
         # TYPE shmbus_top_interval_seconds gauge\n\
         shmbus_top_interval_seconds {:.9}\n",
        took.as_secs_f64(),
        pause.as_secs_f64()
    )
}

/// The connections being served, oldest first.
#[derive(Default)]
struct Open {
    next_id: u64,
    conns: VecDeque<Conn>,
}

struct Conn {
    id: u64,
    /// A clone of its socket, to shut it down when it is evicted.
    socket: TcpStream,
    /// Its request head is in: it is being answered, never evicted.
    answering: bool,
}

type Conns = Arc<Mutex<Open>>;

fn lock(conns: &Conns) -> std::sync::MutexGuard<'_, Open> {
    // Every change is one push, remove or flag: consistent through a panic.
    conns.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes `stream` in, under its id, if there is room: at the limit, the
/// oldest connection still waiting for its request is shut down (its
/// thread's read ends at once) and makes room. `None`: every connection
/// is being answered (each ends by its deadline), or the socket could not
/// be cloned; `stream` is then to be closed unanswered.
fn admit(conns: &Conns, stream: &TcpStream) -> Option<u64> {
    let socket = stream.try_clone().ok()?;
    let mut open = lock(conns);
    if open.conns.len() >= MAX_CONNECTIONS {
        let idle = open.conns.iter().position(|c| !c.answering)?;
        if let Some(evicted) = open.conns.remove(idle) {
            let _ = evicted.socket.shutdown(Shutdown::Both);
        }
    }
    let id = open.next_id;
    open.next_id += 1;
    open.conns.push_back(Conn {
        id,
        socket,
        answering: false,
    });
    Some(id)
}

/// Marks connection `id` as being answered: false if it was evicted (shut
/// down) meanwhile.
fn answering(conns: &Conns, id: u64) -> bool {
    match lock(conns).conns.iter_mut().find(|c| c.id == id) {
        Some(c) => {
            c.answering = true;
            true
        }
        None => false,
    }
}

/// Forgets connection `id` (its thread ends), if it was not evicted.
fn close(conns: &Conns, id: u64) {
    let mut open = lock(conns);
    if let Some(at) = open.conns.iter().position(|c| c.id == id) {
        open.conns.remove(at);
    }
}

/// Accepts connections for ever, each on a thread of its own within the
/// bound.
fn accept(listener: &TcpListener, latest: &Latest) {
    let conns = Conns::default();
    for conn in listener.incoming() {
        let Ok(stream) = conn else {
            // EMFILE and the like: the next accept may succeed; do not
            // spin on a persistent error.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let Some(id) = admit(&conns, &stream) else {
            drop(stream);
            continue;
        };
        let text = Arc::clone(&latest.lock().unwrap_or_else(PoisonError::into_inner));
        let mine = Arc::clone(&conns);
        let spawned = std::thread::Builder::new()
            .name("metrics-conn".into())
            .spawn(move || {
                let deadline = Instant::now() + DEADLINE;
                let _ = serve(stream, &text, deadline, || answering(&mine, id));
                close(&mine, id);
            });
        if spawned.is_err() {
            // The closure, and the stream with it, is dropped: closed.
            close(&conns, id);
        }
    }
}

/// Reads one request head and answers it, all by `deadline`. Once the
/// head is in, `answering` is told so (false: the connection was evicted
/// meanwhile, nothing is written).
fn serve(
    mut stream: TcpStream,
    text: &str,
    deadline: Instant,
    answering: impl FnOnce() -> bool,
) -> std::io::Result<()> {
    let mut head = vec![0u8; MAX_HEAD];
    let mut len = 0;
    let (status, body) = loop {
        if len == head.len() {
            break (431, "request head too large\n");
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        stream.set_read_timeout(Some(left))?;
        let n = stream.read(&mut head[len..])?;
        if n == 0 {
            return Ok(());
        }
        len += n;
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&head[..len]) {
            Ok(httparse::Status::Complete(_)) => {
                break route(req.method.unwrap_or(""), req.path.unwrap_or(""));
            }
            Ok(httparse::Status::Partial) => {}
            Err(httparse::Error::TooManyHeaders) => break (431, "too many headers\n"),
            Err(_) => break (400, "bad request\n"),
        }
    };
    if !answering() {
        return Ok(());
    }
    let head_only = status == 200 && head[..len].starts_with(b"HEAD ");
    let body = if status == 200 { text } else { body };
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Request Header Fields Too Large",
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {CONTENT_TYPE}\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if status == 405 {
        out.push_str("Allow: GET, HEAD\r\n");
    }
    out.push_str("\r\n");
    if !head_only {
        out.push_str(body);
    }
    write_by(&mut stream, out.as_bytes(), deadline)
}

/// Writes all of `bytes` by `deadline`, or gives up.
fn write_by(stream: &mut TcpStream, mut bytes: &[u8], deadline: Instant) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        stream.set_write_timeout(Some(left))?;
        let n = stream.write(bytes)?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        bytes = &bytes[n..];
    }
    let _ = stream.shutdown(std::net::Shutdown::Write);
    Ok(())
}

/// What a request gets: status, and the body unless it is the metrics.
fn route(method: &str, target: &str) -> (u16, &'static str) {
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    if path != "/metrics" {
        return (404, "not found: the metrics are at /metrics\n");
    }
    match method {
        "GET" | "HEAD" => (200, ""),
        _ => (405, "method not allowed: GET /metrics\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_after_a_sample_is_the_interval_or_four_times_the_sample_if_longer() {
        let ms = Duration::from_millis;
        assert_eq!(pace(ms(500), ms(1)), ms(500));
        assert_eq!(pace(ms(500), ms(125)), ms(500));
        assert_eq!(pace(ms(500), ms(800)), ms(3200));
        assert_eq!(pace(ms(10), Duration::MAX), Duration::MAX);
        let text = own_figures(ms(800), ms(3200));
        assert!(
            text.contains("\nshmbus_top_sample_seconds 0.800000000\n")
                && text.contains("\nshmbus_top_interval_seconds 3.200000000\n"),
            "{text}"
        );
    }

    #[test]
    fn only_get_or_head_of_metrics_is_served_and_anything_else_is_404_or_405() {
        assert_eq!(route("GET", "/metrics").0, 200);
        assert_eq!(route("HEAD", "/metrics?x=1").0, 200);
        assert_eq!(route("POST", "/metrics").0, 405);
        assert_eq!(route("GET", "/").0, 404);
        assert_eq!(route("GET", "/metrics/").0, 404);
        assert_eq!(route("GET", "/metricsx").0, 404);
    }

    /// A served connection on a loopback pair: what the client gets for
    /// `request`, sent whole.
    fn exchange(request: &[u8]) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let mut client = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (server, _) = listener.accept().expect("accept");
        let t =
            std::thread::spawn(move || serve(server, "M 1\n", Instant::now() + DEADLINE, || true));
        client.write_all(request).expect("send");
        let mut got = String::new();
        client.read_to_string(&mut got).expect("read");
        let _ = t.join().expect("no panic");
        got
    }

    #[test]
    fn a_request_head_past_the_limit_is_431_and_garbage_is_400_never_a_hang() {
        // Exactly the limit and no end of head: all of it read, then 431.
        let long = format!("GET /metrics HTTP/1.1\r\nX: {}", "a".repeat(MAX_HEAD));
        assert!(exchange(&long.as_bytes()[..MAX_HEAD]).starts_with("HTTP/1.1 431 "));
        assert!(exchange(b"\x00\x01\x02 nonsense\r\n\r\n").starts_with("HTTP/1.1 400 "));
        let ok = exchange(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(
            ok.starts_with("HTTP/1.1 200 OK\r\n") && ok.ends_with("\r\n\r\nM 1\n"),
            "{ok}"
        );
        let head = exchange(b"HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(
            head.contains("Content-Length: 4\r\n") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
    }

    #[test]
    fn a_client_that_sends_half_a_request_is_dropped_at_the_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let mut client = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (server, _) = listener.accept().expect("accept");
        client.write_all(b"GET /metr").expect("send");
        let start = Instant::now();
        let deadline = start + Duration::from_millis(200);
        let served = serve(server, "M 1\n", deadline, || true);
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(150), "ended early: {took:?}");
        assert!(
            took < Duration::from_secs(2),
            "held past its deadline: {took:?}"
        );
        // Its read timed out (or the deadline was found passed): dropped
        // for that, not for another error, and without an answer.
        assert!(
            match &served {
                Ok(()) => true,
                Err(e) => matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
            },
            "{served:?}"
        );
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut answer = Vec::new();
        client
            .read_to_end(&mut answer)
            .expect("the connection closed");
        assert!(answer.is_empty(), "answered: {answer:?}");
    }
}
