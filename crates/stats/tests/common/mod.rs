//! A snapshot reproducing a real HAProxy 2.6.12 run (see `compat.rs`):
//! frontend `www` -> backend `app` (5 servers in various states),
//! TCP backend `tcpb`, and `listen st` (stats page only).

#![allow(dead_code)]

use fairlead_stats::*;

pub fn check(
    status: &str,
    code: Option<u32>,
    dur: Option<u64>,
    desc: &str,
    last: &str,
) -> CheckInfo {
    CheckInfo {
        status: status.into(),
        in_progress: false,
        code,
        duration_ms: dur,
        desc: desc.into(),
        last: last.into(),
        rise: 2,
        fall: 3,
        health: 0,
    }
}

pub fn fixture() -> Snapshot {
    let www = ProxyStats {
        name: "www".into(),
        iid: 2,
        kind: ProxyKind::Frontend,
        mode: Mode::Http,
        status: "OPEN".into(),
        slim: Some(9983),
        counters: Counters {
            smax: 1,
            stot: 4,
            bin: 332,
            bout: 464,
            rate: 4,
            rate_max: 4,
            hrsp_2xx: 4,
            req_rate: 4,
            req_rate_max: 4,
            req_tot: 4,
            conn_rate: 4,
            conn_rate_max: 4,
            conn_tot: 4,
            ..Default::default()
        },
        ..Default::default()
    };
    let a1 = ServerStats {
        name: "a1".into(),
        sid: 1,
        state: ServerState::Up,
        weight: 1,
        uweight: 2,
        check: Some(CheckInfo {
            health: 4,
            ..check("L7OK", Some(200), Some(8), "Layer7 check passed", "")
        }),
        chkfail: 1,
        chkdown: 1,
        lastchg_secs: 1,
        downtime_secs: Some(2),
        qlimit: Some(10),
        throttle: Some(6),
        addr: Some("127.0.0.1:18081".into()),
        cookie: Some("c1".into()),
        need_conn_est: 1,
        ..Default::default()
    };
    let a2 = ServerStats {
        name: "a2".into(),
        sid: 2,
        state: ServerState::Down,
        weight: 1,
        uweight: 1,
        backup: true,
        check: Some(check(
            "L7STS",
            Some(503),
            Some(0),
            "Layer7 wrong status",
            "Service Unavailable",
        )),
        chkfail: 1,
        chkdown: 1,
        lastchg_secs: 2,
        downtime_secs: Some(2),
        addr: Some("127.0.0.1:18082".into()),
        need_conn_est: 1,
        ..Default::default()
    };
    let a3 = ServerStats {
        name: "a3".into(),
        sid: 3,
        state: ServerState::Maint,
        weight: 1,
        uweight: 1,
        lastchg_secs: 3,
        addr: Some("127.0.0.1:18083".into()),
        ..Default::default()
    };
    let traffic = Counters {
        smax: 1,
        stot: 2,
        bin: 166,
        bout: 232,
        lbtot: 2,
        rate: 2,
        rate_max: 2,
        hrsp_2xx: 2,
        req_tot: 2,
        last_sess_secs: Some(0),
        connect: 2,
        ..Default::default()
    };
    let a4 = ServerStats {
        name: "a4".into(),
        sid: 4,
        state: ServerState::Up,
        weight: 1,
        uweight: 1,
        lastchg_secs: 1,
        tracked: Some("app/a1".into()),
        addr: Some("127.0.0.1:18081".into()),
        need_conn_est: 1,
        counters: Counters {
            rtime_ms: 2,
            ttime_ms: 2,
            rtime_max_ms: 2,
            ttime_max_ms: 2,
            ..traffic.clone()
        },
        ..Default::default()
    };
    let a5 = ServerStats {
        name: "a5".into(),
        sid: 5,
        state: ServerState::NoCheck,
        weight: 1,
        uweight: 1,
        agent: Some(CheckInfo {
            rise: 1,
            fall: 1,
            health: 1,
            ..check(
                "L4CON",
                None,
                Some(0),
                "Layer4 connection problem",
                "Connection refused",
            )
        }),
        lastchg_secs: 3,
        addr: Some("127.0.0.1:18081".into()),
        need_conn_est: 1,
        counters: Counters {
            rtime_ms: 4,
            ttime_ms: 4,
            rtime_max_ms: 5,
            ttime_max_ms: 5,
            ..traffic.clone()
        },
        ..Default::default()
    };
    let app = ProxyStats {
        name: "app".into(),
        iid: 3,
        kind: ProxyKind::Backend,
        mode: Mode::Http,
        status: "UP".into(),
        slim: Some(999),
        weight: 3,
        uweight: 4,
        act: 3,
        bck: 0,
        chkdown: 0,
        lastchg_secs: 3,
        downtime_secs: Some(0),
        cookie: Some("SRV".into()),
        algo: "roundrobin".into(),
        counters: Counters {
            smax: 1,
            stot: 4,
            bin: 332,
            bout: 464,
            lbtot: 4,
            rate: 4,
            rate_max: 4,
            hrsp_2xx: 4,
            req_tot: 4,
            last_sess_secs: Some(0),
            rtime_ms: 3,
            ttime_ms: 3,
            connect: 4,
            rtime_max_ms: 5,
            ttime_max_ms: 5,
            ..Default::default()
        },
        servers: vec![a1, a2, a3, a4, a5],
        ..Default::default()
    };
    let t1 = ServerStats {
        name: "t1".into(),
        sid: 1,
        state: ServerState::NoCheck,
        weight: 1,
        uweight: 1,
        lastchg_secs: 3,
        addr: Some("127.0.0.1:18081".into()),
        ..Default::default()
    };
    let tcpb = ProxyStats {
        name: "tcpb".into(),
        iid: 4,
        kind: ProxyKind::Backend,
        mode: Mode::Tcp,
        status: "UP".into(),
        slim: Some(1),
        weight: 1,
        uweight: 1,
        act: 1,
        lastchg_secs: 3,
        downtime_secs: Some(0),
        algo: "leastconn".into(),
        servers: vec![t1],
        ..Default::default()
    };
    let st_fe = ProxyStats {
        name: "st".into(),
        iid: 5,
        kind: ProxyKind::Frontend,
        mode: Mode::Http,
        status: "OPEN".into(),
        slim: Some(9983),
        ..Default::default()
    };
    let st_be = ProxyStats {
        name: "st".into(),
        iid: 5,
        kind: ProxyKind::Backend,
        mode: Mode::Http,
        status: "UP".into(),
        slim: Some(999),
        lastchg_secs: 3,
        algo: "roundrobin".into(),
        ..Default::default()
    };
    Snapshot {
        process: ProcessInfo {
            version: "0.1.0".into(),
            pid: 4242,
            nbthread: 2,
            uptime_secs: 8,
            start_time_secs: 1_795_316_383,
            node: "vm".into(),
            maxconn: 9984,
            curr_conns: 1,
            cum_conns: 14,
            cum_req: 5,
            ..Default::default()
        },
        proxies: vec![www, app, tcpb, st_fe, st_be],
        tables: vec![TableStats {
            name: "www".into(),
            key_type: "ip".into(),
            size: 1024,
            used: 3,
        }],
    }
}
