//! `iceoryx2`: the iceoryx2 crate's publish-subscribe between processes
//! (`ipc` service: shared memory under /dev/shm, bookkeeping files under a
//! root directory).
//!
//! Configured as its fastest setup: zero-copy slices (`[u8]` payload, the
//! publisher loans a sample of exactly `msg_size` bytes from its static data
//! segment, fills it and sends it; the subscriber reads it in place and
//! holds it until the next `recv`), subscribers busy-polling `receive` (no
//! event service, no waitset), no history. Safe overflow is on: the
//! publisher never waits, and a full subscriber buffer drops its oldest
//! sample, which the harness counts as lost, like shmbus's lag (iceoryx2
//! does not report it). Subscriber buffers hold ~4 MiB of messages (64 to
//! 16384 samples), like shmbus's rings. Pingpong uses two services (ping,
//! pong); fanout one service with a subscriber per receiver.
//!
//! Each block has its own iceoryx2 domain (file prefix and root directory
//! from `spec.prefix`): the parent creates the services before the children
//! start and holds them until the block ends; every process has its own
//! node, created with signal handling off (the harness owns the signals).
//! Nodes remove their files when dropped, but a domain keeps a global
//! management segment in /dev/shm and its directories for good; when the
//! block ends the parent cleans up dead nodes (a killed child), then
//! removes what is left of the domain, which no one else can be using.

use std::io;
use std::time::{Duration, Instant};

use ::iceoryx2::port::publisher::Publisher;
use ::iceoryx2::port::subscriber::Subscriber;
use ::iceoryx2::prelude::{
    AllocationStrategy, Config, FileName, Node, NodeBuilder, Path, SemanticString, ServiceName,
    SignalHandlingMode, ipc,
};
use ::iceoryx2::sample::Sample;
use ::iceoryx2::service::builder::publish_subscribe::PublishSubscribeOpenError;
use ::iceoryx2::service::port_factory::publish_subscribe::PortFactory;

use super::{ChannelSpec, Endpoint, Got, Mechanism, Resources, Side};

/// iceoryx2 publish-subscribe between processes.
pub struct Iceoryx2;

type Service = PortFactory<ipc::Service, [u8], ()>;
type Pub = Publisher<ipc::Service, [u8], ()>;
type Sub = Subscriber<ipc::Service, [u8], ()>;
type Held = Sample<ipc::Service, [u8], ()>;

/// How long an open may wait for a service to appear.
const OPEN_LIMIT: Duration = Duration::from_secs(10);

fn io_err(what: &str, e: impl std::fmt::Debug) -> io::Error {
    io::Error::other(format!("iceoryx2: {what}: {e:?}"))
}

/// The block's domain: its file prefix (in /dev/shm) and root directory.
fn domain(token: &str) -> (String, String) {
    (format!("{token}-iox2_"), format!("/tmp/{token}-iceoryx2"))
}

/// A node of this process in the block's domain, with signal handling left
/// to the harness.
fn node(token: &str) -> io::Result<Node<ipc::Service>> {
    let (prefix, root) = domain(token);
    let mut config = Config::default();
    config.global.prefix =
        FileName::new(prefix.as_bytes()).map_err(|e| io_err("file prefix", e))?;
    config
        .global
        .set_root_path(&Path::new(root.as_bytes()).map_err(|e| io_err("root path", e))?);
    NodeBuilder::new()
        .config(&config)
        .signal_handling_mode(SignalHandlingMode::Disabled)
        .create::<ipc::Service>()
        .map_err(|e| io_err("create node", e))
}

fn service_name(token: &str, way: &str) -> io::Result<ServiceName> {
    ServiceName::new(&format!("{token}/{way}")).map_err(|e| io_err("service name", e))
}

/// The services of one block, held by the parent until it ends.
struct Services {
    token: String,
    /// The services, then their node (dropped in that order).
    live: Option<(Vec<Service>, Node<ipc::Service>)>,
}

impl Resources for Services {
    fn token(&self) -> String {
        self.token.clone()
    }
}

impl Drop for Services {
    fn drop(&mut self) {
        if let Some((services, node)) = self.live.take() {
            drop(services);
            // Removes the ports and nodes of receivers that were killed.
            let _ = node.try_cleanup_dead_nodes();
        }
        // What a domain keeps after its last node: the global management
        // segment and the directories. The domain is this block's alone.
        let (prefix, root) = domain(&self.token);
        let _ = std::fs::remove_dir_all(&root);
        if let Ok(dir) = std::fs::read_dir("/dev/shm") {
            for e in dir.flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
}

fn open_service(node: &Node<ipc::Service>, name: &ServiceName) -> io::Result<Service> {
    let deadline = Instant::now() + OPEN_LIMIT;
    loop {
        match node
            .service_builder(name)
            .publish_subscribe::<[u8]>()
            .open()
        {
            Ok(s) => return Ok(s),
            Err(
                PublishSubscribeOpenError::DoesNotExist
                | PublishSubscribeOpenError::HangsInCreation
                | PublishSubscribeOpenError::Interrupt,
            ) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => return Err(io_err(&format!("open service {name}"), e)),
        }
    }
}

fn publisher(service: &Service, msg_size: usize) -> io::Result<Pub> {
    service
        .publisher_builder()
        .initial_max_slice_len(msg_size)
        .allocation_strategy(AllocationStrategy::Static)
        .create()
        .map_err(|e| io_err("create publisher", e))
}

fn subscriber(service: &Service) -> io::Result<Sub> {
    service
        .subscriber_builder()
        .create()
        .map_err(|e| io_err("create subscriber", e))
}

/// One end. Fields drop in order: the held sample, the ports, the node.
struct Ends {
    held: Option<Held>,
    rx: Option<Sub>,
    tx: Option<Pub>,
    _services: Vec<Service>,
    _node: Node<ipc::Service>,
}

impl Endpoint for Ends {
    #[inline]
    fn send(&mut self, msg: &[u8]) -> io::Result<()> {
        let tx = super::sending(&mut self.tx)?;
        let sample = tx
            .loan_slice_uninit(msg.len())
            .map_err(|e| io_err("loan", e))?;
        sample
            .write_from_slice(msg)
            .send()
            .map_err(|e| io_err("send", e))?;
        Ok(())
    }
    #[inline]
    fn recv(&mut self) -> io::Result<Got<'_>> {
        // Returns the previous sample to the publisher.
        self.held = None;
        let rx = super::receiving(&mut self.rx)?;
        let mut patience = super::Patience::default();
        let sample = loop {
            match rx.receive() {
                Ok(Some(s)) => break s,
                Ok(None) => patience.spin()?,
                Err(e) => return Err(io_err("receive", e)),
            }
        };
        Ok(Got::Msg(self.held.insert(sample).payload()))
    }
}

impl Mechanism for Iceoryx2 {
    fn name(&self) -> &'static str {
        "iceoryx2"
    }
    fn describe(&self) -> &'static str {
        "iceoryx2 publish-subscribe between processes (ipc, zero-copy slices, busy-poll)"
    }
    fn setup(&self, spec: &ChannelSpec) -> io::Result<Box<dyn Resources>> {
        let token = spec.prefix.clone();
        let mut resources = Services {
            token: token.clone(),
            live: None,
        };
        let node = node(&token)?;
        let mut services = Vec::new();
        let ways: &[(&str, usize)] = if spec.duplex {
            &[("ping", 0), ("pong", 1)]
        } else {
            &[("ping", 0)]
        };
        for &(way, back) in ways {
            // ping: one subscriber per receiver; pong: the sender's.
            let subscribers = if back == 1 { 1 } else { spec.receivers.max(1) };
            let name = service_name(&token, way)?;
            let service = node
                .service_builder(&name)
                .publish_subscribe::<[u8]>()
                .enable_safe_overflow(true)
                .history_size(0)
                .subscriber_max_buffer_size(super::ring_slots(spec.msg_size))
                .subscriber_max_borrowed_samples(1)
                .max_publishers(1)
                .max_subscribers(subscribers)
                // This node, the sender's and every receiver's.
                .max_nodes(spec.receivers + 2)
                .create()
                .map_err(|e| io_err(&format!("create service {name}"), e))?;
            services.push(service);
        }
        resources.live = Some((services, node));
        Ok(Box::new(resources))
    }
    fn open(&self, token: &str, side: Side, spec: &ChannelSpec) -> io::Result<Box<dyn Endpoint>> {
        let node = node(token)?;
        let ping = open_service(&node, &service_name(token, "ping")?)?;
        let pong = if spec.duplex {
            Some(open_service(&node, &service_name(token, "pong")?)?)
        } else {
            None
        };
        let (tx, rx) = match side {
            Side::Sender => (
                Some(publisher(&ping, spec.msg_size)?),
                pong.as_ref().map(subscriber).transpose()?,
            ),
            Side::Receiver(i) => (
                match &pong {
                    Some(pong) if i == 0 => Some(publisher(pong, spec.msg_size)?),
                    _ => None,
                },
                Some(subscriber(&ping)?),
            ),
        };
        Ok(Box::new(Ends {
            held: None,
            rx,
            tx,
            _services: [Some(ping), pong].into_iter().flatten().collect(),
            _node: node,
        }))
    }
}
