//! The synchronisation task: one thread with its own current-thread tokio
//! runtime per `peers` section.
//!
//! * a listener on the local peer's address accepts sessions;
//! * one connector per remote peer connects when no session with that peer
//!   exists, retrying every [`RECONNECT`] (plus jitter);
//! * every [`PUSH_EVERY`] the queue of locally updated entries of each
//!   table is drained and the updates are sent to every session;
//! * a new session first receives every table (the teach), and a
//!   resynchronisation request gets the teach followed by "finished".
//!
//! The last session established with a peer replaces an existing one, in
//! either direction: HAProxy closes its existing session when it accepts
//! a new one, so the session it accepted is the one that stays open.
//!
//! For [`RESYNC_TIMEOUT`] after start, until a peer finished teaching its
//! tables, every new session asks for it (a resynchronisation request),
//! and a finished teach is confirmed. The teach that answers a request
//! may carry values older than local ones (HAProxy teaches back the
//! entries it learned from us): while it runs, an entry updated locally
//! since the request keeps its local value.
//!
//! On a soft stop ([`Handle::hand_over`]) the listener closes and the
//! tables are taught to the new process (see [`crate::handover`]).

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use fairlead_stick::{Pending, Table};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::task::AbortHandle;

use crate::config::PeersSection;
use crate::wire::{self, code, status, DictCache, Message, Schema};

/// Heartbeat interval when nothing else is sent (HAProxy: 3 s).
pub const HEARTBEAT: Duration = Duration::from_secs(3);
/// A session with nothing received for this long is closed (HAProxy:
/// 5 s).
pub const RECV_TIMEOUT: Duration = Duration::from_secs(5);
/// Delay before reconnecting to a peer (HAProxy: 5 s).
pub const RECONNECT: Duration = Duration::from_secs(5);
/// How often local updates are pushed.
pub const PUSH_EVERY: Duration = Duration::from_millis(100);
/// How long after start new sessions ask for a resynchronisation
/// (HAProxy's `PEER_RESYNC_TIMEOUT`: 5 s).
pub const RESYNC_TIMEOUT: Duration = Duration::from_secs(5);

/// What a peers task needs.
pub struct Setup {
    /// The section.
    pub section: PeersSection,
    /// The local peer name (`-L`, `localpeer`, else the host name).
    pub local: String,
    /// The tables of the section and the proxies' tables that name it
    /// with `peers`.
    pub tables: Vec<Table>,
    /// The clock the tables use (milliseconds).
    pub now: fn() -> u64,
    /// Do not print warnings.
    pub quiet: bool,
}

struct LocalTable {
    table: Table,
    schema: Schema,
    wire_name: String,
    next_update: u32,
}

/// A live session: generation, writer queue, task, and the bytes queued
/// for its writer.
type Live = (u64, UnboundedSender<Vec<u8>>, AbortHandle, Rc<Cell<usize>>);

/// Bytes of updates a session may have queued for a peer that does not
/// read; past it the session is closed (the peer gets the whole table
/// again when it reconnects), so a stalled peer cannot grow memory.
pub const MAX_QUEUED: usize = 8 << 20;

pub(crate) struct Shared {
    setup: Setup,
    tables: RefCell<Vec<LocalTable>>,
    /// Live sessions per peer name: a generation, its writer and task.
    sessions: RefCell<HashMap<String, Live>>,
    next_gen: std::cell::Cell<u64>,
    /// A peer finished teaching its tables (no more resync requests).
    resynced: Cell<bool>,
    /// When the task started (resync requests stop [`RESYNC_TIMEOUT`]
    /// later).
    started: std::time::Instant,
    /// Per table, the queue of locally updated entries.
    queues: RefCell<Vec<Receiver<Pending>>>,
    /// Sessions whose answer to our resync request is still running.
    learning: Cell<usize>,
    /// While `learning` is not zero: the (table index, key) of entries
    /// pushed since, which the answering teach must not overwrite.
    touched: RefCell<HashSet<(usize, Vec<u8>)>>,
}

/// One session's pending answer to our resync request; dropping it (when
/// the answer ends or the session does) ends the learning window.
struct Learning(Rc<Shared>);

impl Learning {
    fn start(shared: &Rc<Shared>) -> Learning {
        shared.learning.set(shared.learning.get() + 1);
        Learning(shared.clone())
    }
}

impl Drop for Learning {
    fn drop(&mut self) {
        let n = self.0.learning.get().saturating_sub(1);
        self.0.learning.set(n);
        if n == 0 {
            self.0.touched.borrow_mut().clear();
        }
    }
}

impl Shared {
    pub(crate) fn warn(&self, msg: &str) {
        if !self.setup.quiet {
            eprintln!("[WARNING]  peers '{}': {msg}", self.setup.section.name);
        }
    }

    /// The local peer's name.
    pub(crate) fn local(&self) -> &str {
        &self.setup.local
    }

    /// Definition of every table followed by all of its entries.
    fn teach(&self) -> Vec<u8> {
        self.teach_with_last().0
    }

    /// [`Shared::teach`], and the last update id sent for each table that
    /// has entries (by wire table id).
    pub(crate) fn teach_with_last(&self) -> (Vec<u8>, HashMap<u64, u32>) {
        let now = (self.setup.now)();
        let mut out = Vec::new();
        let mut last = HashMap::new();
        let mut tables = self.tables.borrow_mut();
        for (i, t) in tables.iter_mut().enumerate() {
            let id = i as u64 + 1;
            wire::encode_define(&mut out, id, &t.wire_name, &t.schema, t.table.spec());
            for e in t.table.entries(now) {
                t.next_update = t.next_update.wrapping_add(1);
                let vals = e.peer_values(now);
                let exp = e.peer_expire(now);
                wire::encode_update(&mut out, &t.schema, t.next_update, exp, e.key(), &vals);
                last.insert(id, t.next_update);
            }
        }
        (out, last)
    }

    /// Whether a new session asks for a resynchronisation.
    fn asks_resync(&self) -> bool {
        !self.resynced.get() && self.started.elapsed() < RESYNC_TIMEOUT
    }

    /// Sends the queued local updates to every session now.
    fn flush(&self) {
        let out = self.drain();
        if out.is_empty() {
            return;
        }
        for (_, tx, task, queued) in self.sessions.borrow().values() {
            if queued.get() > MAX_QUEUED {
                self.warn("a peer does not read its updates; closing its session");
                task.abort();
                continue;
            }
            queued.set(queued.get() + out.len());
            let _ = tx.send(out.clone());
        }
    }

    /// Encodes the queued local updates of every table (noting their keys
    /// while a resync answer runs).
    fn drain(&self) -> Vec<u8> {
        let now = (self.setup.now)();
        let mut out = Vec::new();
        let mut tables = self.tables.borrow_mut();
        let queues = self.queues.borrow();
        let learning = self.learning.get() > 0;
        let mut touched = self.touched.borrow_mut();
        for (i, (t, q)) in tables.iter_mut().zip(queues.iter()).enumerate() {
            let mut defined = false;
            while let Ok(p) = q.try_recv() {
                let Some(e) = p.take() else { continue };
                if !defined {
                    let name = t.wire_name.clone();
                    wire::encode_define(&mut out, i as u64 + 1, &name, &t.schema, t.table.spec());
                    defined = true;
                }
                t.next_update = t.next_update.wrapping_add(1);
                let vals = e.peer_values(now);
                wire::encode_update(&mut out, &t.schema, t.next_update, None, e.key(), &vals);
                if learning {
                    touched.insert((i, e.key().to_vec()));
                }
                e.release(now);
            }
        }
        out
    }
}

/// A running section's task, for the soft stop.
pub struct Handle {
    stop: tokio::sync::watch::Sender<bool>,
    done: std::sync::mpsc::Receiver<bool>,
}

impl Handle {
    /// Starts the reload hand-over: the listener closes and the tables are
    /// taught to the new process through the local peer's address.
    pub fn hand_over(&self) {
        let _ = self.stop.send(true);
    }

    /// Waits up to `limit` for the hand-over to end. Returns whether the
    /// new process acknowledged every table.
    pub fn wait(&self, limit: Duration) -> bool {
        self.done.recv_timeout(limit).unwrap_or(false)
    }
}

/// Starts the task of one section on its own thread. Returns `None` when
/// the section is disabled or has no line for the local peer (HAProxy
/// then removes it).
pub fn start(setup: Setup) -> Option<Handle> {
    if setup.section.disabled {
        return None;
    }
    let Some(listen) = setup.section.listen_addr(&setup.local) else {
        if !setup.quiet {
            eprintln!(
                "[WARNING]  Removing incomplete section 'peers {}' (no peer named '{}').",
                setup.section.name, setup.local
            );
        }
        return None;
    };
    let mut queues = Vec::new();
    let mut tables = Vec::new();
    for t in &setup.tables {
        let Some(q) = t.subscribe() else { continue };
        queues.push(q);
        tables.push(LocalTable {
            table: t.clone(),
            schema: Schema::local(t.spec()),
            wire_name: PeersSection::wire_name(t.name(), &setup.section.name),
            next_update: 0,
        });
    }
    let name = format!("peers-{}", setup.section.name);
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    let (done_tx, done) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("[ALERT]    peers: cannot start the runtime: {e}");
                    return;
                }
            };
            let shared = Rc::new(Shared {
                setup,
                tables: RefCell::new(tables),
                sessions: RefCell::new(HashMap::new()),
                next_gen: std::cell::Cell::new(1),
                resynced: Cell::new(false),
                started: std::time::Instant::now(),
                queues: RefCell::new(queues),
                learning: Cell::new(0),
                touched: RefCell::new(HashSet::new()),
            });
            let local = tokio::task::LocalSet::new();
            let handed = local.block_on(&rt, run(shared, listen, stop));
            let _ = done_tx.send(handed);
        })
        .ok()?;
    Some(Handle {
        stop: stop_tx,
        done,
    })
}

/// Runs the section until a soft stop, then hands the tables over.
async fn run(
    shared: Rc<Shared>,
    listen: SocketAddr,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> bool {
    let listening = tokio::task::spawn_local(listener(shared.clone(), listen));
    let pushing = tokio::task::spawn_local(push(shared.clone()));
    while !*stop.borrow() {
        if stop.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
    listening.abort();
    let _ = listening.await;
    let handed = crate::handover::hand_over(&shared, listen).await;
    pushing.abort();
    handed
}

/// Connects to the remote peers and pushes local updates to every
/// session.
async fn push(shared: Rc<Shared>) {
    let remotes: Vec<(String, SocketAddr)> = shared
        .setup
        .section
        .remotes(&shared.setup.local)
        .filter_map(|p| Some((p.name.clone(), p.addr?)))
        .collect();
    for (name, addr) in remotes {
        tokio::task::spawn_local(connector(shared.clone(), name, addr));
    }
    let mut tick = tokio::time::interval(PUSH_EVERY);
    loop {
        tick.tick().await;
        shared.flush();
    }
}

async fn listener(shared: Rc<Shared>, addr: SocketAddr) {
    // During a reload the previous process holds the address until it
    // stops: retry quietly at first.
    let since = tokio::time::Instant::now();
    let mut warned = false;
    let l = loop {
        match TcpListener::bind(addr).await {
            Ok(l) => break l,
            Err(e) => {
                if !warned && since.elapsed() > crate::handover::HAND_OVER {
                    shared.warn(&format!("cannot bind {addr}: {e}; retrying"));
                    warned = true;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    loop {
        let Ok((s, _)) = l.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let _ = s.set_nodelay(true);
        tokio::task::spawn_local(accept_one(shared.clone(), s));
    }
}

/// Reads up to `n` lines (at most 1 KiB); returns them and what followed.
pub(crate) async fn read_lines(s: &mut TcpStream, n: usize) -> Option<(Vec<String>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        let lines = buf.iter().filter(|b| **b == b'\n').count();
        if lines >= n {
            let mut out = Vec::new();
            let mut start = 0;
            for _ in 0..n {
                let end = start + buf.get(start..)?.iter().position(|b| *b == b'\n')?;
                out.push(String::from_utf8_lossy(buf.get(start..end)?).into_owned());
                start = end + 1;
            }
            return Some((out, buf.get(start..)?.to_vec()));
        }
        if buf.len() > 1024 {
            return None;
        }
        let r = tokio::time::timeout(RECV_TIMEOUT, s.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if r == 0 {
            return None;
        }
        buf.extend_from_slice(chunk.get(..r)?);
    }
}

async fn accept_one(shared: Rc<Shared>, mut s: TcpStream) {
    let Some((lines, rest)) = read_lines(&mut s, 3).await else {
        return;
    };
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let code = match wire::check_hello(&refs, &shared.setup.local) {
        Ok(name) if shared.setup.section.peers.iter().any(|p| p.name == name) => {
            if s.write_all(b"200\n").await.is_err() {
                return;
            }
            session(shared, s, name, rest).await;
            return;
        }
        Ok(_) => status::ERR_PEER,
        Err(c) => c,
    };
    let _ = s.write_all(format!("{code}\n").as_bytes()).await;
}

fn jitter() -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0);
    Duration::from_millis(h.finish() % 1000)
}

async fn connector(shared: Rc<Shared>, name: String, addr: SocketAddr) {
    loop {
        if !shared.sessions.borrow().contains_key(&name) {
            // Failures are retried after the delay.
            let _ = connect_once(&shared, &name, addr).await;
        }
        tokio::time::sleep(RECONNECT + jitter()).await;
    }
}

async fn connect_once(shared: &Rc<Shared>, name: &str, addr: SocketAddr) -> Result<(), ()> {
    let mut s = tokio::time::timeout(RECONNECT, TcpStream::connect(addr))
        .await
        .map_err(|_| ())?
        .map_err(|_| ())?;
    let _ = s.set_nodelay(true);
    let hello = wire::hello(name, &shared.setup.local, std::process::id());
    s.write_all(hello.as_bytes()).await.map_err(|_| ())?;
    let (lines, rest) = read_lines(&mut s, 1).await.ok_or(())?;
    if lines.first().map(|l| l.trim()) != Some("200") {
        shared.warn(&format!(
            "peer '{name}' refused the session: status {}",
            lines.first().map_or("", |l| l.trim())
        ));
        return Err(());
    }
    session(shared.clone(), s, name.to_string(), rest).await;
    Ok(())
}

/// Registers the session (replacing an older one with that peer: the
/// peer, which accepted or opened this one last, closes the other) and
/// runs it until it fails.
async fn session(shared: Rc<Shared>, s: TcpStream, name: String, rest: Vec<u8>) {
    let (tx, rx) = unbounded_channel();
    let gen = shared.next_gen.get();
    shared.next_gen.set(gen + 1);
    let mut taught = shared.teach();
    let learning = shared.asks_resync().then(|| Learning::start(&shared));
    if learning.is_some() {
        wire::encode_control(&mut taught, code::CTRL_RESYNC_REQ);
    }
    let queued = Rc::new(Cell::new(taught.len()));
    let _ = tx.send(taught);
    let task = tokio::task::spawn_local(run_session(
        shared.clone(),
        s,
        rx,
        tx.clone(),
        rest,
        queued.clone(),
        learning,
    ));
    let old = shared
        .sessions
        .borrow_mut()
        .insert(name.clone(), (gen, tx, task.abort_handle(), queued));
    if let Some((_, _, h, _)) = old {
        h.abort();
    }
    let _ = task.await;
    let mut sessions = shared.sessions.borrow_mut();
    if sessions.get(&name).is_some_and(|(g, _, _, _)| *g == gen) {
        sessions.remove(&name);
    }
}

/// What a session learned about the sender's tables.
#[derive(Default)]
struct Remote {
    /// Sender's table id to (local table index, schema).
    defs: HashMap<u64, (Option<usize>, Schema)>,
    current: Option<u64>,
    last_update: u32,
    /// Sender's table id and last update to acknowledge.
    to_ack: HashMap<u64, u32>,
    dict: DictCache,
    /// Set until the answer to our resync request ends.
    learning: Option<Learning>,
}

async fn run_session(
    shared: Rc<Shared>,
    s: TcpStream,
    mut rx: UnboundedReceiver<Vec<u8>>,
    tx: UnboundedSender<Vec<u8>>,
    mut buf: Vec<u8>,
    queued: Rc<Cell<usize>>,
    learning: Option<Learning>,
) {
    let (mut rd, mut wr) = s.into_split();
    let writer = async move {
        loop {
            let out = match tokio::time::timeout(HEARTBEAT, rx.recv()).await {
                Ok(Some(b)) => b,
                Ok(None) => return,
                Err(_) => vec![code::CLASS_CONTROL, code::CTRL_HEARTBEAT],
            };
            // A peer that takes nothing for RECV_TIMEOUT is gone.
            match tokio::time::timeout(RECV_TIMEOUT, wr.write_all(&out)).await {
                Ok(Ok(())) => queued.set(queued.get().saturating_sub(out.len())),
                _ => return,
            }
        }
    };
    let reader = async move {
        let mut remote = Remote {
            learning,
            ..Remote::default()
        };
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            loop {
                match wire::decode(&buf) {
                    Ok(Some((m, used))) => {
                        buf.drain(..used);
                        handle(&shared, &mut remote, m, &tx);
                    }
                    Ok(None) => break,
                    Err(_) => {
                        let _ = tx.send(vec![code::CLASS_ERROR, code::ERR_PROTO]);
                        return;
                    }
                }
            }
            let mut acks = Vec::new();
            for (id, upd) in remote.to_ack.drain() {
                wire::encode_ack(&mut acks, id, upd);
            }
            if !acks.is_empty() {
                let _ = tx.send(acks);
            }
            let n = match tokio::time::timeout(RECV_TIMEOUT, rd.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => n,
                _ => return,
            };
            buf.extend_from_slice(chunk.get(..n).unwrap_or(&[]));
        }
    };
    tokio::select! {
        _ = writer => {}
        _ = reader => {}
    }
}

fn handle(shared: &Shared, r: &mut Remote, m: Message, tx: &UnboundedSender<Vec<u8>>) {
    match m {
        Message::Control(code::CTRL_RESYNC_REQ) => {
            let mut out = shared.teach();
            wire::encode_control(&mut out, code::CTRL_RESYNC_FINISHED);
            let _ = tx.send(out);
        }
        Message::Control(c @ (code::CTRL_RESYNC_FINISHED | code::CTRL_RESYNC_PARTIAL)) => {
            if c == code::CTRL_RESYNC_FINISHED {
                shared.resynced.set(true);
            }
            r.learning = None;
            let mut out = Vec::new();
            wire::encode_control(&mut out, code::CTRL_RESYNC_CONFIRM);
            let _ = tx.send(out);
        }
        Message::Control(_) | Message::Error(_) | Message::Ack { .. } | Message::Other { .. } => {}
        Message::Define(d) => {
            let local = shared.tables.borrow().iter().position(|t| {
                t.wire_name.as_bytes() == d.name.as_slice()
                    && t.schema.key_type == d.key_type
                    && t.schema.key_len as u64 == d.key_len
            });
            match Schema::remote(&d) {
                Some(s) => {
                    r.defs.insert(d.id, (local, s));
                }
                None => {
                    r.defs.remove(&d.id);
                }
            }
            r.current = Some(d.id);
        }
        Message::Switch(id) => r.current = Some(id),
        Message::Update { id, expire, body } => {
            let upd = id.unwrap_or(r.last_update.wrapping_add(1));
            r.last_update = upd;
            let Some(cur) = r.current else { return };
            r.to_ack.insert(cur, upd);
            let Some((Some(li), schema)) = r.defs.get(&cur) else {
                return;
            };
            if r.learning.is_some() {
                // Local updates not yet pushed count as touched too.
                shared.flush();
            }
            let tables = shared.tables.borrow();
            let Some(t) = tables.get(*li) else { return };
            let key_len = t.table.spec().key_len;
            let Some((key, vals)) = wire::decode_update(schema, key_len, &body, &mut r.dict) else {
                return;
            };
            if r.learning.is_some() && shared.touched.borrow().contains(&(*li, key.clone())) {
                return;
            }
            t.table
                .apply_peer(&key, &vals, expire, (shared.setup.now)());
        }
    }
}
