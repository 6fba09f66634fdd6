//! `shmbus top --listen ADDR:PORT`: the `--prometheus` text served at
//! `/metrics` over HTTP, for a scraper (Prometheus, an agent, curl).
//!
//! One thread samples every `--interval-ms` and keeps the latest text; a
//! scrape gets that text, so a scrape costs no sample and its rates are
//! over one interval. Any other path is 404, a method other than GET or
//! HEAD is 405.
//!
//! tiny_http reads each connection's request on a thread of its pool, so a
//! client that sends its request slowly, or never, holds that thread and
//! nothing else: the next scrape is read on another. A request is answered
//! on a thread of its own (at most [`MAX_WRITERS`] at once; past that, a
//! 503), so a client that never reads its response cannot hold the loop
//! that answers the others either.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tiny_http::{Header, Method, Request, Response, Server};

use super::model::Sampler;
use super::prom;
use crate::error::CliError;

/// Responses being written at once; a scrape past this many is told 503
/// at once rather than queued behind clients that do not read.
pub const MAX_WRITERS: usize = 16;

/// The content type of the text exposition format, version 0.0.4.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Serves `/metrics` on `addr` until the process is ended.
pub fn run(addr: &str, mut sampler: Sampler, interval: Duration) -> Result<(), CliError> {
    let server = Server::http(addr)
        .map_err(|e| CliError::usage(format!("--listen {addr}: cannot listen there: {e}")))?;
    let bound = match server.server_addr() {
        tiny_http::ListenAddr::IP(a) => a.to_string(),
        other => format!("{other:?}"),
    };
    // The first text has no rates; a scrape before the second sample gets
    // it rather than waiting.
    sampler.sample();
    let mut text: Arc<str> = Arc::from(prom::exposition(&sampler.sample()));
    {
        use std::io::Write;
        let mut out = crate::out::stdout()?;
        writeln!(out, "serving http://{bound}/metrics")
            .and_then(|()| out.flush())
            .map_err(CliError::stdout)?;
    }
    let writers = Arc::new(AtomicUsize::new(0));
    let mut next = Instant::now() + interval;
    loop {
        let now = Instant::now();
        if now >= next {
            text = Arc::from(prom::exposition(&sampler.sample()));
            next = now + interval;
        }
        match server.recv_timeout(next.saturating_duration_since(now)) {
            Ok(Some(req)) => answer(req, &text, &writers),
            Ok(None) => {}
            Err(e) => return Err(CliError::runtime(format!("--listen {bound}: {e}"))),
        }
    }
}

/// What a request gets: status and body.
fn route(method: &Method, url: &str) -> (u16, Option<&'static str>) {
    let path = url.split_once('?').map_or(url, |(p, _)| p);
    if path != "/metrics" {
        return (404, Some("not found: the metrics are at /metrics\n"));
    }
    match method {
        Method::Get | Method::Head => (200, None),
        _ => (405, Some("method not allowed: GET /metrics\n")),
    }
}

fn answer(req: Request, text: &Arc<str>, writers: &Arc<AtomicUsize>) {
    let (status, body) = route(req.method(), req.url());
    let body: Arc<str> = match body {
        Some(b) => Arc::from(b),
        None => Arc::clone(text),
    };
    if writers.fetch_add(1, Ordering::Relaxed) >= MAX_WRITERS {
        writers.fetch_sub(1, Ordering::Relaxed);
        let _ = req.respond(
            Response::from_string("busy: too many responses in flight\n").with_status_code(503),
        );
        return;
    }
    let done = Arc::clone(writers);
    let spawned = std::thread::Builder::new()
        .name("metrics-writer".into())
        .spawn(move || {
            let mut resp = Response::from_data(body.as_bytes().to_vec()).with_status_code(status);
            if let Some(h) = content_type() {
                resp = resp.with_header(h);
            }
            let _ = req.respond(resp);
            done.fetch_sub(1, Ordering::Relaxed);
        });
    if spawned.is_err() {
        // No thread: the request is dropped with the closure (the client
        // sees the connection close) and its count is given back.
        writers.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The Content-Type header (a constant: `None` never happens).
fn content_type() -> Option<Header> {
    Header::from_bytes(&b"Content-Type"[..], CONTENT_TYPE.as_bytes()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_get_or_head_of_metrics_is_served_and_anything_else_is_404_or_405() {
        assert_eq!(route(&Method::Get, "/metrics"), (200, None));
        assert_eq!(route(&Method::Head, "/metrics?x=1"), (200, None));
        assert_eq!(route(&Method::Post, "/metrics").0, 405);
        assert_eq!(route(&Method::Get, "/").0, 404);
        assert_eq!(route(&Method::Get, "/metrics/").0, 404);
        assert_eq!(route(&Method::Get, "/metricsx").0, 404);
    }

    #[test]
    fn the_content_type_is_the_text_format_s() {
        assert_eq!(
            content_type().expect("a valid header").value.as_str(),
            CONTENT_TYPE
        );
    }
}
