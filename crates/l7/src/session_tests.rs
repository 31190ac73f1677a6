//! The session's size bounds.

/// An idle connection must stay cheap: the connection task's state
/// machine (what every connection carries while it waits) is small; the
/// request phase lives in a pooled slot only while a request runs.
#[test]
fn idle_connection_state_is_small() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let c = tokio::net::TcpStream::connect(l.local_addr().unwrap())
            .await
            .unwrap();
        let ctx = test_ctx(None, Default::default());
        let idle = super::serve_http(c.into(), "127.0.0.1:1".parse().unwrap(), ctx.clone());
        let size = std::mem::size_of_val(&idle);
        let s = super::Session {
            client: tokio::net::TcpStream::connect(l.local_addr().unwrap())
                .await
                .unwrap()
                .into(),
            peer: "127.0.0.1:1".parse().unwrap(),
            ctx,
            eff: crate::Effective {
                conn_mode: Default::default(),
                reuse: Default::default(),
            },
            cbuf: fairlead_net::IoBuf::new(),
            attached: None,
            sess: None,
            first: true,
            accepted_at: tokio::time::Instant::now(),
            last_end: tokio::time::Instant::now(),
            first_byte: tokio::time::Instant::now(),
            hold: None,
        };
        let request = std::mem::size_of_val(&super::request_phase(s));
        eprintln!("idle task state {size} bytes, request phase {request} bytes");
        eprintln!(
            "session {} attached {} conn {} iobuf {} effective {}",
            std::mem::size_of::<super::Session>(),
            std::mem::size_of::<Option<super::Attached>>(),
            std::mem::size_of::<fairlead_net::Conn>(),
            std::mem::size_of::<fairlead_net::IoBuf>(),
            std::mem::size_of::<crate::Effective>()
        );
        // 1,256 bytes until the idle wait became one hand-written future
        // (`fairlead_net::wait::IdleWait`, 232 bytes with its caller,
        // against 888 for the composed `timeout_at` + `readable` +
        // `select!`) and the session stopped being held twice (once as
        // the async fn's arguments): 496, then 480 with the server
        // connection of `http-reuse never` boxed. A keep-alive connection
        // with a runtime hold does not keep this task while idle (see
        // `crate::park`); a new one does until its first request.
        assert!(size <= 480, "idle connection state is {size} bytes");
        assert!(request > size, "the request phase should be the large part");
    });
}

/// A frontend context with no server, `service` (if any) answering the
/// requests, and these timeouts.
pub(crate) fn test_ctx(
    service: Option<std::sync::Arc<dyn crate::LocalService + Send + Sync>>,
    timeouts: fairlead_config::Timeouts,
) -> std::rc::Rc<crate::HttpCtx> {
    let cfg = fairlead_config::Backend::default();
    let be = std::sync::Arc::new(
        fairlead_backend::Backend::new(&cfg, &|_| unreachable!(), &mut 0, 1).unwrap(),
    );
    let routes = crate::Routes {
        fe_rules: Default::default(),
        backends: Vec::new(),
        be_rules: Vec::new(),
        by_name: Default::default(),
        default: None,
        default_be: be,
        hostname: "h".into(),
        inspect_max: 1000,
    };
    std::rc::Rc::new(crate::HttpCtx {
        service,
        front: std::sync::Arc::new(crate::Frontend {
            name: "x".into(),
            mode: fairlead_config::Mode::Http,
            timeouts,
            conn_mode: Default::default(),
            forwardfor: None,
            accept_invalid_http_request: false,
            http_no_delay: false,
            max_head: 1000,
            routes: std::sync::Arc::new(routes),
            counters: Default::default(),
            log: None,
            errors: Default::default(),
            actconn: Default::default(),
            feconn: Default::default(),
            denied_conn: Default::default(),
            denied_sess: Default::default(),
            h2_only: Vec::new(),
            h2: Default::default(),
            splice: Default::default(),
        }),
        stop: std::rc::Rc::new(fairlead_net::Stop::new()),
    })
}
