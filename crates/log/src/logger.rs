//! Delivery: a process-wide [`Logger`] with bounded in-memory queues, one
//! per producer thread, and one background thread that frames and sends
//! the messages.
//!
//! Producers (worker threads) render a line into a thread-local buffer,
//! then copy it into their own queue under that queue's lock, which no
//! other producer takes (threads get queues in turn; past [`QUEUES`]
//! threads, queues are shared, still exactly): a bounds check and one
//! `memcpy`, no allocation after the thread's first message, no shared
//! write and no system call unless the drain thread is asleep (then one
//! wake-up). When a thread's queue is full the message is dropped and
//! counted ([`Logger::dropped`]), as HAProxy's rings do; a producer never
//! waits for a send. The drain thread swaps each non-empty queue with a
//! spare buffer of the same capacity and does the blocking sends outside
//! every lock, merging the queues by timestamp; each thread's messages
//! keep their order.
//!
//! [`Logger::stop`] sends everything queued before it; producers that
//! come after it see the stop under their queue's lock and count their
//! message as dropped, so nothing is lost without being counted.
//!
//! Why not `std::sync::mpsc::sync_channel` + `try_send`: it would need one
//! owned allocation per message and bounds the number of messages rather
//! than the memory they take; the double buffer bounds bytes and allocates
//! nothing after start-up.

use std::cell::Cell;
use std::cell::RefCell;
use std::io::{self, Write};
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crate::format::LogFormat;
use crate::record::LogRecord;
use crate::target::{write_header, Header, Level, LogAddr, TargetSpec};
use crate::time::{self, Civil};

/// Process-wide settings of a [`Logger`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggerOptions {
    /// Global `log-tag`. Default is `fairlead` (HAProxy's default is its
    /// program name).
    pub tag: String,
    /// `log-send-hostname`: the host name written in `rfc3164` and
    /// `rfc5424` headers; also switches the default format from `local`
    /// to `rfc3164`. Default is none.
    pub hostname: Option<String>,
    /// Capacity in bytes of each producer thread's queue (each message
    /// takes its length plus 21 bytes), allocated at the thread's first
    /// message; the drain thread keeps a spare of the same size per queue.
    /// Default is 1 MiB.
    pub ring_bytes: usize,
    /// Process id written in headers. Default is the current process's.
    pub pid: u32,
}

impl Default for LoggerOptions {
    fn default() -> Self {
        LoggerOptions {
            tag: "fairlead".into(),
            hostname: None,
            ring_bytes: 1 << 20,
            pid: std::process::id(),
        }
    }
}

/// A set of targets messages can be sent to: one per proxy (its `log`
/// lines, `log global` expanded) and usually one for the global section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sink {
    pub targets: Vec<TargetSpec>,
    /// The proxy's `log-tag`. Default is none: the global tag.
    pub tag: Option<String>,
}

/// Index of a [`Sink`] in the list given to [`Logger::start`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SinkId(pub usize);

/// Bytes before each message in a queue: length (4), sink (4), level (1),
/// seconds (8), microseconds (4).
const REC_HDR: usize = 21;
/// Longest message accepted (the largest `len`).
const MAX_MSG: usize = 65535;

/// Producer queues. Default is 64.
pub const QUEUES: usize = 64;

/// One producer thread's queue, alone on its cache lines.
#[repr(align(128))]
#[derive(Default)]
struct Queue {
    pending: Mutex<Vec<u8>>,
}

/// The drain thread's control (never taken by a producer, except to wake
/// the drain thread).
struct State {
    /// A producer (or `flush`) asks the sleeping drain thread to look.
    wake: bool,
    /// The drain thread holds a batch taken from the queues.
    busy: bool,
    stop: bool,
}

struct Shared {
    queues: Box<[Queue]>,
    /// The drain thread is asleep or about to sleep: the producer that
    /// swaps it to false wakes it.
    sleeping: AtomicBool,
    /// Set by `stop` before the drain thread's last pass; producers check
    /// it under their queue's lock.
    stopped: AtomicBool,
    state: Mutex<State>,
    wake: Condvar,
    idle: Condvar,
    dropped: AtomicU64,
    sent: AtomicU64,
    cap: usize,
    /// Per sink: the least severe level any of its targets accepts.
    max_level: Vec<Option<Level>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// The process's logger. Cheap to clone; all clones share the queues.
#[derive(Clone)]
pub struct Logger {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Logger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logger")
            .field("dropped", &self.dropped())
            .field("sent", &self.sent())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Next queue to hand to a thread.
static NEXT_QUEUE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static LINE: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(1024));
    static MY_QUEUE: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// The calling thread's queue (the last one during thread teardown).
fn my_queue() -> usize {
    MY_QUEUE
        .try_with(|q| {
            if q.get() == usize::MAX {
                q.set(NEXT_QUEUE.fetch_add(1, Ordering::Relaxed) % QUEUES);
            }
            q.get()
        })
        .unwrap_or(QUEUES - 1)
}

impl Logger {
    /// Opens the sockets (names are resolved now) and starts the drain
    /// thread. `stdout`/`stderr` targets write to the process's streams.
    pub fn start(opts: LoggerOptions, sinks: Vec<Sink>) -> io::Result<Logger> {
        Logger::start_with_writers(opts, sinks, Box::new(io::stdout()), Box::new(io::stderr()))
    }

    /// Same as [`start`](Self::start), with the writers used for `stdout`
    /// and `stderr` targets (for tests, or to redirect them).
    pub fn start_with_writers(
        opts: LoggerOptions,
        sinks: Vec<Sink>,
        stdout: Box<dyn Write + Send>,
        stderr: Box<dyn Write + Send>,
    ) -> io::Result<Logger> {
        let mut outs = Outputs::new(stdout, stderr);
        let mut resolved = Vec::with_capacity(sinks.len());
        for s in &sinks {
            let mut ts = Vec::with_capacity(s.targets.len());
            for t in &s.targets {
                ts.push((t.clone(), outs.open(&t.addr)?));
            }
            resolved.push((ts, s.tag.clone().unwrap_or_else(|| opts.tag.clone())));
        }
        let cap = opts.ring_bytes.max(REC_HDR + 1024);
        let shared = Arc::new(Shared {
            queues: (0..QUEUES).map(|_| Queue::default()).collect(),
            sleeping: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            state: Mutex::new(State {
                wake: false,
                busy: false,
                stop: false,
            }),
            wake: Condvar::new(),
            idle: Condvar::new(),
            dropped: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            cap,
            max_level: sinks
                .iter()
                .map(|s| s.targets.iter().map(|t| t.level).max())
                .collect(),
            thread: Mutex::new(None),
        });
        let drain = Drain {
            shared: shared.clone(),
            sinks: resolved,
            outs,
            spares: (0..QUEUES).map(|_| Vec::new()).collect(),
            frame: Vec::with_capacity(MAX_MSG + 256),
            opts,
        };
        let handle = std::thread::Builder::new()
            .name("fairlead-log".into())
            .spawn(move || drain.run())?;
        *shared.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        Ok(Logger { shared })
    }

    /// True when some target of `sink` would send a message of `level`:
    /// check it before building a record.
    pub fn wants(&self, sink: SinkId, level: Level) -> bool {
        matches!(self.shared.max_level.get(sink.0), Some(Some(l)) if level <= *l)
    }

    /// Queues one message (without header or line feed) for `sink`.
    /// Never blocks: returns false when no target wants it, or when the
    /// ring is full (the message is dropped and counted).
    pub fn emit(&self, sink: SinkId, level: Level, msg: &[u8]) -> bool {
        if !self.wants(sink, level) {
            return false;
        }
        let msg = &msg[..msg.len().min(MAX_MSG)];
        let (secs, micros) = time::unix_micros(SystemTime::now());
        let need = REC_HDR + msg.len();
        let Some(queue) = self.shared.queues.get(my_queue()) else {
            return false;
        };
        let mut p = lock(&queue.pending);
        if self.shared.stopped.load(Ordering::SeqCst) || p.len() + need > self.shared.cap {
            drop(p);
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        if p.capacity() < self.shared.cap {
            // The thread's first message: the whole queue at once.
            let more = self.shared.cap - p.len();
            p.reserve_exact(more);
        }
        p.extend_from_slice(&(msg.len() as u32).to_le_bytes());
        p.extend_from_slice(&(sink.0 as u32).to_le_bytes());
        p.push(level as u8);
        p.extend_from_slice(&secs.to_le_bytes());
        p.extend_from_slice(&micros.to_le_bytes());
        p.extend_from_slice(msg);
        drop(p);
        // The drain thread stores `sleeping` before it looks at the queues
        // under their locks: either it sees this message or this load sees
        // it asleep.
        if self.shared.sleeping.load(Ordering::SeqCst)
            && self.shared.sleeping.swap(false, Ordering::SeqCst)
        {
            self.shared.wake_drain();
        }
        true
    }

    /// Renders `record` with `format` (as JSON when `json`) and queues it.
    /// Allocation-free once the thread's line buffer has grown.
    pub fn log(
        &self,
        sink: SinkId,
        level: Level,
        format: &LogFormat,
        json: bool,
        record: &LogRecord,
    ) -> bool {
        if !self.wants(sink, level) {
            return false;
        }
        LINE.with(|b| {
            let mut b = b.borrow_mut();
            b.clear();
            if json {
                format.render_json(record, &mut b);
            } else {
                format.render(record, &mut b);
            }
            self.emit(sink, level, &b)
        })
    }

    /// Messages dropped: ring full, logger stopped, or a send that failed
    /// (counted once per target).
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Messages sent (once per target).
    pub fn sent(&self) -> u64 {
        self.shared.sent.load(Ordering::Relaxed)
    }

    /// Waits until everything queued so far was sent, at most `timeout`.
    /// Returns false on timeout.
    pub fn flush(&self, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        let sh = &self.shared;
        let mut st = lock(&sh.state);
        // `busy` is set under this lock before the drain thread takes a
        // batch: not busy and every queue empty means all was sent.
        while st.busy || !sh.queues_empty() {
            if sh.sleeping.swap(false, Ordering::SeqCst) {
                st.wake = true;
                sh.wake.notify_one();
            }
            let now = Instant::now();
            if now >= end {
                return false;
            }
            st = sh
                .idle
                .wait_timeout(st, end - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }

    /// Sends what is queued, then stops the drain thread. Later messages
    /// are dropped (and counted).
    pub fn stop(&self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        lock(&self.shared.state).stop = true;
        self.shared.wake.notify_one();
        let h = self
            .shared
            .thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(h) = h {
            let _ = h.join();
        }
    }
}

impl Shared {
    fn wake_drain(&self) {
        lock(&self.state).wake = true;
        self.wake.notify_one();
    }

    fn queues_empty(&self) -> bool {
        self.queues.iter().all(|q| lock(&q.pending).is_empty())
    }
}

/// Where one target's messages go, once opened.
enum Out {
    Udp(SocketAddr),
    Unix(PathBuf),
    Stdout,
    Stderr,
}

struct Outputs {
    udp4: Option<UdpSocket>,
    udp6: Option<UdpSocket>,
    unix: Option<UnixDatagram>,
    stdout: Box<dyn Write + Send>,
    stderr: Box<dyn Write + Send>,
    stdout_dirty: bool,
    stderr_dirty: bool,
}

impl Outputs {
    fn new(stdout: Box<dyn Write + Send>, stderr: Box<dyn Write + Send>) -> Outputs {
        Outputs {
            udp4: None,
            udp6: None,
            unix: None,
            stdout,
            stderr,
            stdout_dirty: false,
            stderr_dirty: false,
        }
    }

    fn open(&mut self, addr: &LogAddr) -> io::Result<Out> {
        Ok(match addr {
            LogAddr::Stdout => Out::Stdout,
            LogAddr::Stderr => Out::Stderr,
            LogAddr::Unix(p) => {
                if self.unix.is_none() {
                    let s = UnixDatagram::unbound()?;
                    // A stuck syslog daemon must not stall the other targets.
                    s.set_write_timeout(Some(Duration::from_millis(500)))?;
                    self.unix = Some(s);
                }
                Out::Unix(p.clone())
            }
            LogAddr::Udp(a) => self.udp(*a)?,
            LogAddr::UdpName(h, port) => {
                let a = (h.as_str(), *port)
                    .to_socket_addrs()?
                    .next()
                    .ok_or_else(|| {
                        io::Error::new(
                            io::ErrorKind::NotFound,
                            format!("log server '{h}' has no address"),
                        )
                    })?;
                self.udp(a)?
            }
        })
    }

    fn udp(&mut self, a: SocketAddr) -> io::Result<Out> {
        let slot = if a.is_ipv4() {
            &mut self.udp4
        } else {
            &mut self.udp6
        };
        if slot.is_none() {
            let any: SocketAddr = if a.is_ipv4() {
                "0.0.0.0:0".parse().expect("literal")
            } else {
                "[::]:0".parse().expect("literal")
            };
            *slot = Some(UdpSocket::bind(any)?);
        }
        Ok(Out::Udp(a))
    }

    fn send(&mut self, out: &Out, frame: &[u8]) -> io::Result<()> {
        match out {
            Out::Udp(a) => {
                let s = if a.is_ipv4() { &self.udp4 } else { &self.udp6 };
                s.as_ref()
                    .map_or(Ok(0), |s| s.send_to(frame, a))
                    .map(|_| ())
            }
            Out::Unix(p) => self
                .unix
                .as_ref()
                .map_or(Ok(0), |s| s.send_to(frame, p))
                .map(|_| ()),
            Out::Stdout => {
                self.stdout_dirty = true;
                self.stdout.write_all(frame)
            }
            Out::Stderr => {
                self.stderr_dirty = true;
                self.stderr.write_all(frame)
            }
        }
    }

    fn flush(&mut self) {
        if std::mem::take(&mut self.stdout_dirty) {
            let _ = self.stdout.flush();
        }
        if std::mem::take(&mut self.stderr_dirty) {
            let _ = self.stderr.flush();
        }
    }
}

/// The drain thread's state.
struct Drain {
    shared: Arc<Shared>,
    /// Per sink: its targets with their outputs, and its tag.
    sinks: Vec<(Vec<(TargetSpec, Out)>, String)>,
    outs: Outputs,
    /// Per queue: the batch taken from it (swapped with its buffer).
    spares: Vec<Vec<u8>>,
    frame: Vec<u8>,
    opts: LoggerOptions,
}

/// One queued record: sink, level, time and message.
struct Rec<'a> {
    sink: usize,
    level: Level,
    secs: i64,
    micros: u32,
    msg: &'a [u8],
}

/// The record at `at` in a batch, and where the next one starts.
fn record_at(batch: &[u8], at: usize) -> Option<(Rec<'_>, usize)> {
    let h = batch.get(at..at.checked_add(REC_HDR)?)?;
    let word = |i: usize| -> Option<[u8; 4]> { h.get(i..i + 4)?.try_into().ok() };
    let len = u32::from_le_bytes(word(0)?) as usize;
    let sink = u32::from_le_bytes(word(4)?) as usize;
    let level = Level::from_u8(*h.get(8)?);
    let secs = i64::from_le_bytes(h.get(9..17)?.try_into().ok()?);
    let micros = u32::from_le_bytes(word(17)?);
    let start = at + REC_HDR;
    let end = start.checked_add(len)?.min(batch.len());
    let msg = batch.get(start..end)?;
    let rec = Rec {
        sink,
        level,
        secs,
        micros,
        msg,
    };
    Some((rec, start + len))
}

impl Drain {
    fn run(mut self) {
        loop {
            let stop = {
                let mut st = lock(&self.shared.state);
                st.busy = true;
                st.stop
            };
            let took = self.take_all();
            if took {
                self.send_batches();
            }
            lock(&self.shared.state).busy = false;
            self.shared.idle.notify_all();
            if took {
                continue;
            }
            if stop {
                // This pass began after `stopped` was set and found
                // nothing: every later producer drops.
                return;
            }
            self.sleep();
        }
    }

    /// Sleeps until a producer, `flush` or `stop` wakes the thread.
    fn sleep(&self) {
        let sh = &self.shared;
        sh.sleeping.store(true, Ordering::SeqCst);
        if !sh.queues_empty() {
            // A message came in before the flag was seen: no sleep.
            sh.sleeping.store(false, Ordering::SeqCst);
            return;
        }
        let mut st = lock(&sh.state);
        while !st.wake && !st.stop {
            st = sh.wake.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.wake = false;
        sh.sleeping.store(false, Ordering::SeqCst);
    }

    /// Swaps every non-empty queue with its spare; true when any was.
    fn take_all(&mut self) -> bool {
        let mut took = false;
        let cap = self.shared.cap;
        for (q, spare) in self.shared.queues.iter().zip(self.spares.iter_mut()) {
            let mut p = lock(&q.pending);
            if p.is_empty() {
                continue;
            }
            if spare.capacity() < cap {
                // Allocated here, not by the producer after the swap.
                spare.reserve_exact(cap);
            }
            std::mem::swap(&mut *p, spare);
            took = true;
        }
        took
    }

    /// Sends the batches taken, oldest message first across queues (each
    /// queue in its order), then empties them.
    fn send_batches(&mut self) {
        let batches = std::mem::take(&mut self.spares);
        let mut at: Vec<(usize, usize)> = batches
            .iter()
            .enumerate()
            .filter(|(_, b)| !b.is_empty())
            .map(|(i, _)| (i, 0))
            .collect();
        loop {
            let mut next: Option<(usize, Rec<'_>, usize)> = None;
            for (k, &(i, pos)) in at.iter().enumerate() {
                let Some((rec, end)) = batches.get(i).and_then(|b| record_at(b, pos)) else {
                    continue;
                };
                let older = next
                    .as_ref()
                    .is_none_or(|(_, n, _)| (rec.secs, rec.micros) < (n.secs, n.micros));
                if older {
                    next = Some((k, rec, end));
                }
            }
            let Some((k, rec, end)) = next else {
                break;
            };
            if let Some(e) = at.get_mut(k) {
                e.1 = end;
            }
            let date = Civil::from_unix(rec.secs, rec.micros);
            self.send_one(rec.sink, rec.level, date, rec.msg);
        }
        self.outs.flush();
        self.spares = batches;
        self.spares.iter_mut().for_each(Vec::clear);
    }

    fn send_one(&mut self, sink: usize, level: Level, date: Civil, msg: &[u8]) {
        let Some((targets, tag)) = self.sinks.get(sink) else {
            return;
        };
        for (t, out) in targets {
            let Some(lvl) = t.accepts(level) else {
                continue;
            };
            self.frame.clear();
            let hostname = self.opts.hostname.as_deref();
            write_header(
                &mut self.frame,
                &Header {
                    format: t.effective_format(hostname.is_some()),
                    facility: t.facility,
                    level: lvl,
                    date: &date,
                    hostname,
                    tag,
                    pid: self.opts.pid,
                },
            );
            self.frame.extend_from_slice(msg);
            self.frame.truncate(t.len.saturating_sub(1));
            self.frame.push(b'\n');
            match self.outs.send(out, &self.frame) {
                Ok(()) => self.shared.sent.fetch_add(1, Ordering::Relaxed),
                Err(_) => self.shared.dropped.fetch_add(1, Ordering::Relaxed),
            };
        }
    }
}

/// The system's host name (for `log-send-hostname` without argument and
/// `%H`): `/proc/sys/kernel/hostname`, else `$HOSTNAME`, else `localhost`.
pub fn system_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "localhost".into())
}
