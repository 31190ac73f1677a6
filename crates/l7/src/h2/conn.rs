//! The connection task: reader, writer and stream driver (see the
//! [module](super) docs).

use crate::HttpCtx;
use fairlead_h2::{Conn as Codec, Event, Recv};
use fairlead_http::msg::{self, Head};
use fairlead_net::io::until;
use fairlead_net::{pool, Conn, IoBuf};
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// How long a closing connection keeps reading (and dropping) what the
/// client still sends, so that closing with unread input does not turn
/// into a reset that could destroy the GOAWAY in flight.
const LINGER: Duration = Duration::from_millis(500);

/// On a soft stop, how long an idle connection waits for the answer to
/// the shutdown PING before it closes anyway.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// A stream's signals from the connection.
#[derive(Default)]
pub(crate) struct Signals {
    /// Request body bytes (or its end) arrived.
    pub body: Notify,
    /// The send window grew.
    pub window: Notify,
    /// The client reset the stream.
    pub cancel: Notify,
}

/// What the reader keeps for one open stream.
pub(crate) struct StreamIo {
    pub id: u32,
    /// Request body bytes received and not yet written to the server.
    pub body: Vec<u8>,
    /// END_STREAM (or trailers) received.
    pub end: bool,
    /// The client's trailers, for a chunked request body.
    pub trailers: Option<Head>,
    /// The client reset the stream.
    pub reset: bool,
    pub sig: Rc<Signals>,
}

/// The state the reader, the writer and the streams share.
pub(crate) struct Shared {
    pub codec: Codec,
    /// Bytes to write (a pooled vector while not empty).
    pub out: Vec<u8>,
    pub streams: Vec<StreamIo>,
}

impl Shared {
    pub fn stream(&mut self, id: u32) -> Option<&mut StreamIo> {
        self.streams.iter_mut().find(|s| s.id == id)
    }

    /// Makes sure the output is a pooled vector before the codec writes.
    pub fn out_ready(&mut self) {
        if self.out.capacity() == 0 {
            self.out = pool::take_out();
        }
    }

    /// After the codec ran: an empty output goes back to the pool (an
    /// idle connection holds none). True when there is something to write.
    pub fn out_settle(&mut self) -> bool {
        if !self.out.is_empty() {
            return true;
        }
        if self.out.capacity() > 0 {
            pool::give_out(std::mem::take(&mut self.out));
        }
        false
    }
}

/// One HTTP/2 client connection.
pub(crate) struct ConnCx {
    pub client: Conn,
    pub peer: SocketAddr,
    pub ctx: Rc<HttpCtx>,
    pub sh: RefCell<Shared>,
    /// Wakes the writer: output is queued.
    pub wr: Notify,
    /// Wakes the reader: a stream ended.
    pub ev: Notify,
    /// Wakes the driver: a stream was added.
    spawned: Notify,
    /// When the connection last had no stream (accept, or the end of
    /// the last stream), for the idle timeouts.
    pub idle_since: Cell<Instant>,
    /// A request was received on this connection.
    pub served: Cell<bool>,
    /// The connection is closing: the writer stops once all is written.
    closing: Cell<bool>,
    /// The connection's stick counter slots (`tcp-request connection|session`
    /// `track-scN`), shared by its streams.
    pub sess_trk: RefCell<Option<Rc<fairlead_stick::Trackers>>>,
}

impl ConnCx {
    /// Runs `f` on the codec and the output, then wakes the writer if
    /// anything was queued. Never held across an await.
    pub fn with<R>(&self, f: impl FnOnce(&mut Codec, &mut Vec<u8>) -> R) -> R {
        let mut sh = self.sh.borrow_mut();
        let sh = &mut *sh;
        sh.out_ready();
        let r = f(&mut sh.codec, &mut sh.out);
        if sh.out_settle() {
            self.wr.notify_one();
        }
        r
    }
}

type StreamFut = Pin<Box<dyn Future<Output = ()>>>;

/// The codec settings of a client connection (`fe`) or of a
/// connection to a server, from `tune.h2.*` and `tune.bufsize`.
pub(crate) fn codec_config(ctx: &HttpCtx, fe: bool) -> fairlead_h2::Config {
    let max_head = ctx.front.max_head;
    let t = &ctx.front.h2;
    let mut cfg = fairlead_h2::Config {
        max_concurrent_streams: match t.max_concurrent_streams(fe) {
            0 => u32::MAX,
            n => n,
        },
        initial_window_size: t.initial_window_size(fe),
        max_frame_size: t.max_frame_size(),
        header_table_size: t.header_table_size(),
        reset_budget: t.glitches_threshold(fe),
        // Extended CONNECT (RFC 8441), for WebSocket over HTTP/2.
        enable_connect_protocol: fe,
        ..fairlead_h2::Config::default()
    };
    // A whole header block must fit in one receive buffer.
    let block = u32::try_from(max_head).unwrap_or(u32::MAX);
    cfg.max_header_block = cfg.max_header_block.min(block);
    cfg.max_header_list_size = cfg.max_header_list_size.min(block);
    cfg
}

/// Serves one HTTP/2 client connection until it closes. `cbuf` holds
/// what was already read (the preface, when it was detected).
pub async fn serve_h2(
    client: Conn,
    peer: SocketAddr,
    ctx: Rc<HttpCtx>,
    cbuf: IoBuf,
    sess_trk: Option<Rc<fairlead_stick::Trackers>>,
) {
    // TCP_NODELAY comes from the listener (see fairlead_net::tune_listener).
    let mut out = pool::take_out();
    let codec = Codec::server(codec_config(&ctx, true), &mut out);
    let cx = Rc::new(ConnCx {
        client,
        peer,
        ctx,
        sh: RefCell::new(Shared {
            codec,
            out,
            streams: Vec::new(),
        }),
        wr: Notify::new(),
        ev: Notify::new(),
        spawned: Notify::new(),
        idle_since: Cell::new(Instant::now()),
        served: Cell::new(false),
        closing: Cell::new(false),
        sess_trk: RefCell::new(sess_trk),
    });
    cx.wr.notify_one();
    let set: RefCell<FuturesUnordered<StreamFut>> = RefCell::new(FuturesUnordered::new());
    let w = writer(&cx);
    tokio::pin!(w);
    let writer_failed = tokio::select! {
        _ = reader(&cx, cbuf, &set) => false,
        _ = &mut w => true,
        _ = drive(&cx, &set) => false,
    };
    // Streams still running are dropped: their server connections close.
    drop(set.into_inner());
    if !writer_failed {
        // The writer finishes what it was writing and what is left (a
        // GOAWAY), within the linger time.
        cx.closing.set(true);
        cx.wr.notify_one();
        let _ = tokio::time::timeout(LINGER, &mut w).await;
    }
    close(&cx).await;
    // The connection's stick counters are released once its streams are
    // gone (they hold the other references).
    let trk = cx.sess_trk.take();
    crate::session::end_sess_trackers(trk);
}

/// Closes with a linger.
async fn close(cx: &ConnCx) {
    {
        let mut sh = cx.sh.borrow_mut();
        for s in sh.streams.drain(..) {
            if let Some(t) = s.trailers {
                msg::give(t);
            }
        }
    }
    cx.client.shutdown_write();
    let mut drain = IoBuf::new();
    let deadline = Some(Instant::now() + LINGER);
    loop {
        let r = until(deadline, "linger", async {
            drain.read_from(&cx.client, usize::MAX).await
        })
        .await;
        match r {
            Ok(n) if n > 0 => {
                let len = drain.len();
                drain.consume(len);
            }
            _ => break,
        }
    }
}

/// Writes queued output until writing fails.
async fn writer(cx: &ConnCx) {
    let ct = cx.ctx.front.timeouts.client;
    loop {
        let chunk = {
            let mut sh = cx.sh.borrow_mut();
            if sh.out.is_empty() {
                None
            } else {
                Some(std::mem::take(&mut sh.out))
            }
        };
        let Some(v) = chunk else {
            if cx.closing.get() {
                return;
            }
            cx.wr.notified().await;
            continue;
        };
        let r = cx.client.write_all(&v, ct).await;
        pool::give_out(v);
        if r.is_err() {
            return;
        }
        cx.sh.borrow_mut().codec.flushed();
    }
}

/// Polls the stream futures; never ends.
async fn drive(cx: &ConnCx, set: &RefCell<FuturesUnordered<StreamFut>>) {
    loop {
        let notified = cx.spawned.notified();
        tokio::pin!(notified);
        poll_fn(|t| {
            let spawned = notified.as_mut().poll(t).is_ready();
            let r = set.borrow_mut().poll_next_unpin(t);
            match r {
                Poll::Ready(Some(())) => Poll::Ready(()),
                _ if spawned => Poll::Ready(()),
                _ => Poll::Pending,
            }
        })
        .await;
    }
}

/// Reads and dispatches until the connection must close.
async fn reader(cx: &Rc<ConnCx>, mut cbuf: IoBuf, set: &RefCell<FuturesUnordered<StreamFut>>) {
    let stop = cx.ctx.stop.clone();
    let mut stopped_at: Option<Instant> = None;
    loop {
        if !cbuf.is_empty() {
            match dispatch(cx, &mut cbuf, set) {
                Pass::Failed => return,
                Pass::Capped => {
                    tokio::task::yield_now().await;
                    continue;
                }
                Pass::Done => {}
            }
        }
        cbuf.release_if_empty();
        let (done, idle) = {
            let sh = cx.sh.borrow();
            (sh.codec.is_done(), sh.streams.is_empty())
        };
        if done && idle {
            return;
        }
        let mut deadline = if idle { idle_deadline(cx) } else { None };
        if let (true, Some(at)) = (idle, stopped_at) {
            // Stopping and idle: the client has this long to answer the
            // shutdown PING (or send what crossed our GOAWAY).
            let end = at + STOP_GRACE;
            deadline = Some(deadline.map_or(end, |d| d.min(end)));
        }
        let read = until(deadline, "client timeout", async {
            cbuf.read_from(&cx.client, usize::MAX).await
        });
        tokio::select! {
            r = read => match r {
                Ok(n) if n > 0 => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    cx.with(|c, o| c.goaway(fairlead_h2::ErrorCode::NO_ERROR, o));
                    return;
                }
                _ => return,
            },
            _ = cx.ev.notified() => {}
            _ = stop.wait(), if stopped_at.is_none() => {
                stopped_at = Some(Instant::now());
                cx.with(|c, o| c.shutdown(o));
            }
        }
    }
}

/// When an idle connection times out.
fn idle_deadline(cx: &ConnCx) -> Option<Instant> {
    let t = &cx.ctx.front.timeouts;
    let d = if cx.served.get() {
        t.http_keep_alive.or(t.http_request).or(t.client)
    } else {
        t.http_request.or(t.client)
    };
    d.map(|d| cx.idle_since.get() + d)
}

/// What one [`dispatch`] pass did.
#[derive(PartialEq, Eq)]
enum Pass {
    /// All buffered input was processed.
    Done,
    /// It stopped at [`new_streams_per_pass`] new streams: let them run
    /// before going on (rapid-reset and stream-flood defence).
    Capped,
    /// A connection error (its GOAWAY is queued).
    Failed,
}

/// New streams one read pass may open: twice the concurrency limit (the
/// streams that end at once free their places), 200 by default, at most
/// 2000 (when the limit is off).
fn new_streams_per_pass(t: &fairlead_config::H2Tune) -> usize {
    match t.max_concurrent_streams(true) {
        0 => 2000,
        n => (n as usize).saturating_mul(2).clamp(2, 2000),
    }
}

/// Feeds the buffered input to the codec and acts on its events.
fn dispatch(cx: &Rc<ConnCx>, cbuf: &mut IoBuf, set: &RefCell<FuturesUnordered<StreamFut>>) -> Pass {
    let mut opened = 0;
    let mut pass = Pass::Done;
    let cap = new_streams_per_pass(&cx.ctx.front.h2);
    loop {
        if opened >= cap {
            pass = Pass::Capped;
            break;
        }
        let mut sh = cx.sh.borrow_mut();
        let sh = &mut *sh;
        sh.out_ready();
        let r = sh.codec.recv(cbuf.filled_mut(), &mut sh.out);
        let consumed = match r {
            Err(_) => {
                cx.wr.notify_one();
                return Pass::Failed;
            }
            Ok(Recv {
                consumed: 0,
                event: None,
            }) => break,
            Ok(Recv { consumed, event }) => {
                if let Some(e) = event {
                    if let Some(fut) = on_event(cx, sh, e) {
                        set.borrow_mut().push(fut);
                        cx.spawned.notify_one();
                        opened += 1;
                    }
                }
                consumed
            }
        };
        cbuf.consume(consumed);
    }
    if cx.sh.borrow_mut().out_settle() {
        cx.wr.notify_one();
    }
    pass
}

/// One codec event; a new request gives a stream future to run.
fn on_event(cx: &Rc<ConnCx>, sh: &mut Shared, e: Event<'_>) -> Option<StreamFut> {
    match e {
        Event::Head {
            stream,
            head,
            end_stream,
        } => {
            let sig = Rc::new(Signals::default());
            sh.streams.push(StreamIo {
                id: stream,
                body: Vec::new(),
                end: end_stream,
                trailers: None,
                reset: false,
                sig: sig.clone(),
            });
            cx.served.set(true);
            let total = u64::from(cx.ctx.front.h2.fe_max_total_streams());
            if total > 0 && sh.codec.opened_streams() >= total {
                // `tune.h2.fe.max-total-streams`: this is the last one.
                sh.codec
                    .goaway(fairlead_h2::ErrorCode::NO_ERROR, &mut sh.out);
            }
            let fut = super::stream::run(cx.clone(), stream, head, end_stream, sig);
            return Some(Box::pin(fut));
        }
        Event::Data {
            stream,
            data,
            end_stream,
        } => match sh.stream(stream) {
            Some(s) if !s.reset => {
                if s.body.capacity() == 0 && !data.is_empty() {
                    s.body = pool::take_out();
                }
                s.body.extend_from_slice(data);
                s.end |= end_stream;
                s.sig.body.notify_one();
            }
            _ => sh.codec.release(stream, data.len(), &mut sh.out),
        },
        Event::Trailers { stream, head } => match sh.stream(stream) {
            Some(s) => {
                if let Some(old) = s.trailers.replace(head) {
                    msg::give(old);
                }
                s.end = true;
                s.sig.body.notify_one();
            }
            None => msg::give(head),
        },
        Event::Reset { stream, .. } => {
            if let Some(s) = sh.stream(stream) {
                s.reset = true;
                s.sig.cancel.notify_one();
            }
        }
        Event::WindowUpdate { stream: 0 } | Event::Settings => {
            for s in &sh.streams {
                s.sig.window.notify_one();
            }
        }
        Event::WindowUpdate { stream } => {
            if let Some(s) = sh.stream(stream) {
                s.sig.window.notify_one();
            }
        }
        Event::GoAway { .. } | Event::SettingsAcked | Event::Pong { .. } => {}
    }
    None
}
