//! Rendering and queueing allocate nothing once buffers are warm: counted
//! with a global allocator that tallies the allocations of each thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io;
use std::time::Duration;

use fairlead_log::*;

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded to the system allocator with the same layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> usize {
    ALLOCS.with(Cell::get)
}

#[test]
fn render_and_log_do_not_allocate() {
    let caps: [Option<&[u8]>; 2] = [Some(b"host.example"), None];
    let r = LogRecord {
        http: true,
        client: Some("[2001:db8::1]:34082".parse().unwrap()),
        frontend_addr: Some("10.0.0.1:80".parse().unwrap()),
        frontend: "fe",
        backend: "bk",
        server: Some("s1"),
        idle: Some(1),
        request_done: Some(3),
        queue_done: Some(3),
        connect_done: Some(4),
        response_done: Some(9),
        total: 12,
        status: Some(200),
        cookie_req: Some("SRV=a"),
        request_line: Some(b"GET /x?y=\"1\" HTTP/1.1"),
        req_captures: &caps,
        ..LogRecord::default()
    };
    let formats: Vec<LogFormat> = [
        HTTPLOG_FORMAT,
        HTTPLOG_CLF,
        TCPLOG_FORMAT,
        "%{+X}ci %T %Tl %HPO %{+E}HQ %hrl",
    ]
    .iter()
    .map(|f| compile(f).unwrap())
    .collect();
    let connect = LogFormat::connect();
    let mut out = Vec::with_capacity(4096);
    let before = allocs();
    for f in &formats {
        out.clear();
        f.render(&r, &mut out);
        out.clear();
        f.render_json(&r, &mut out);
    }
    connect.render(&r, &mut out);
    assert_eq!(allocs() - before, 0, "rendering allocated");

    let sinks = vec![Sink {
        targets: vec![parse_target(&["stdout".into(), "daemon".into()]).unwrap()],
        tag: None,
    }];
    let log = Logger::start_with_writers(
        LoggerOptions::default(),
        sinks,
        Box::new(io::sink()),
        Box::new(io::sink()),
    )
    .unwrap();
    // Warm the thread's line buffer.
    assert!(log.log(SinkId(0), Level::Info, &formats[0], false, &r));
    let before = allocs();
    for _ in 0..100 {
        assert!(log.log(SinkId(0), Level::Info, &formats[0], false, &r));
        assert!(log.log(SinkId(0), Level::Info, &formats[1], true, &r));
    }
    assert_eq!(allocs() - before, 0, "queueing allocated");
    assert!(log.flush(Duration::from_secs(5)));
    log.stop();
}
