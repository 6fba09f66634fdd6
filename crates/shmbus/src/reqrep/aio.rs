//! A service's waits other than its handles' own: a [`Server`] is a
//! [`Select`](crate::select::Select) member (ready once a client may have
//! posted a request), and both sides wait in async code without a thread
//! and without spinning (see [`aio`](crate::aio)): the same looks as the
//! blocking calls, with the doorbell's sleeper half in between.

use std::time::Instant;

use super::client::{Look, read_value, typed_fits};
use super::table::Service;
use super::{CallError, Client, PEER_CHECK, Pending, Request, SendError, Server};
use crate::aio::readable;
use crate::bus::Payload;
use crate::mem::Region;
use crate::member::Member;
use crate::sync::{AtomicU32, Ordering};
use crate::wire::Message;

impl<Req: ?Sized + Payload, Resp: ?Sized + Payload, R: Region> Member for Server<Req, Resp, R> {
    fn ready(&self) -> bool {
        // The same Acquire loads of the summary as `Server::recv`'s look.
        self.service.has_work()
    }
    fn bell(&self) -> &AtomicU32 {
        self.service.work_bell()
    }
    fn nap(&self) -> Option<std::time::Duration> {
        // Every post rings; a client that dies after posting has rung.
        None
    }
}

/// A client's call in slot `k`, waiting in state word `seen`: ready once
/// that word moves (an answer, a give-back).
struct Answer<'a, R: Region> {
    service: &'a Service<R>,
    client: u32,
    slot: u32,
    seen: u64,
}

impl<R: Region> Member for Answer<'_, R> {
    fn ready(&self) -> bool {
        // Acquire, as the blocking wait's look.
        self.service
            .state(self.client, self.slot)
            .load(Ordering::Acquire)
            != self.seen
    }
    fn bell(&self) -> &AtomicU32 {
        self.service.client_bell(self.client)
    }
    fn nap(&self) -> Option<std::time::Duration> {
        // A server that dies rings no bell: look at its lock this often.
        Some(PEER_CHECK)
    }
}

impl<Req: ?Sized + Payload, Resp: ?Sized + Payload, R: Region> Server<Req, Resp, R> {
    /// The next request, waiting without a thread and without spinning.
    /// What [`Server::recv`] is with `Wait::Forever`, for async code.
    /// Cancel-safe: a dropped future has taken nothing.
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::{Wait, reqrep::{self, Options}};
    ///
    /// let (server, mut client) = shmbus::internals::service_on_heap::<u64, u64>(&Options::new(1))?;
    /// let call = client.send(&3, Wait::Never)?;
    /// let request = server.recv_async().await;
    /// assert_eq!(request.get(), 3);
    /// request.respond(&4)?;
    /// assert_eq!(client.wait(call, Wait::Never)?, 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv_async(&self) -> Request<'_, Req, Resp, R> {
        loop {
            if let Some(taken) = self.take() {
                return self.request(taken);
            }
            self.service.clean_summary();
            readable(self).await;
        }
    }
}

/// An async wait's call: given up on (as [`Client::cancel`]) if the
/// future is dropped before its outcome.
struct Outstanding<'c, Req: ?Sized + Payload, Resp: ?Sized + Payload, R: Region> {
    client: &'c mut Client<Req, Resp, R>,
    slot: u32,
    generation: u32,
    ended: bool,
}

impl<Req: ?Sized + Payload, Resp: ?Sized + Payload, R: Region> Drop
    for Outstanding<'_, Req, Resp, R>
{
    fn drop(&mut self) {
        if !self.ended {
            self.client.give_up(self.slot, self.generation);
        }
    }
}

impl<Req: ?Sized + Payload, Resp: Message, R: Region> Client<Req, Resp, R> {
    /// Waits for `call`'s outcome without a thread and without spinning:
    /// what [`Client::wait`] is with `Wait::Forever`, for async code (wrap
    /// it in a timeout for a deadline). A dropped future gives the call
    /// up, as [`Client::cancel`] does.
    ///
    /// # Errors
    /// As [`Client::wait`], but never `TimedOut`.
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::{Wait, reqrep::Options};
    ///
    /// let (server, mut client) = shmbus::internals::service_on_heap::<u64, u64>(&Options::new(1))?;
    /// let call = client.send(&3, Wait::Never)?;
    /// server.recv(Wait::Never).expect("a request").respond(&9)?;
    /// assert_eq!(client.wait_async(call).await?, 9);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn wait_async(&mut self, call: Pending) -> Result<Resp, CallError> {
        if !self.owns(&call) {
            return Err(CallError::UnknownCall);
        }
        let mut out = Outstanding {
            client: self,
            slot: call.slot,
            generation: call.generation,
            ended: false,
        };
        let mut probe = Instant::now() + PEER_CHECK;
        let mut read = Some(read_value::<Resp, R>);
        loop {
            let (k, generation) = (out.slot, out.generation);
            let seen = match out.client.look(
                k,
                generation,
                &typed_fits::<Resp>,
                &mut read,
                Some(&mut probe),
            ) {
                Look::Ended(outcome) => {
                    out.ended = true;
                    return outcome;
                }
                Look::Waiting(seen) => seen,
            };
            readable(&Answer {
                service: &out.client.service,
                client: out.client.entry,
                slot: k,
                seen,
            })
            .await;
        }
    }
}

impl<Req: Message, Resp: Message, R: Region> Client<Req, Resp, R> {
    /// Sends `request` and waits for its response, without a thread and
    /// without spinning: what [`Client::call`] is with `Wait::Forever`,
    /// for async code. If every call slot is outstanding it waits for one
    /// to come back. A dropped future gives the call up.
    ///
    /// # Errors
    /// As [`Client::wait_async`].
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::reqrep::Options;
    ///
    /// let (server, mut client) = shmbus::internals::service_on_heap::<u64, u64>(&Options::new(1))?;
    /// let serving = async {
    ///     let request = server.recv_async().await;
    ///     let n = request.get();
    ///     request.respond(&(n + 1)).unwrap();
    /// };
    /// let (answer, ()) = tokio::join!(client.call_async(&41), serving);
    /// assert_eq!(answer?, 42);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn call_async(&mut self, request: &Req) -> Result<Resp, CallError> {
        let call = loop {
            match self.send_bytes(bytemuck::bytes_of(request), Some(Instant::now())) {
                Ok(call) => break call,
                Err(SendError::Full { .. }) => {
                    // A slot comes back when a call is answered and read
                    // (ours, elsewhere in this program) or given back by a
                    // server, which rings our bell; a dead server's is
                    // found on the next try, `PEER_CHECK` apart.
                    let service = &self.service;
                    let c = self.entry;
                    readable(&Answer {
                        service,
                        client: c,
                        slot: 0,
                        seen: service.state(c, 0).load(Ordering::Acquire),
                    })
                    .await;
                }
                Err(e) => return Err(e.into()),
            }
        };
        self.wait_async(call).await
    }
}
