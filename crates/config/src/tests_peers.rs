//! The `peers` section and `localpeer`.

use crate::test_util::*;

#[test]
fn peers_section_tables_and_localpeer() {
    let p = ok("global\n  localpeer fl1\npeers mesh\n  peer fl1 127.0.0.71:20001\n  peer hap 127.0.0.72:20001\n  table t type ip size 1k expire 30s store http_req_cnt\nbackend bk\n  mode http\n  server s 127.0.0.1:1\n  stick-table type ip size 10 peers mesh\nfrontend f\n  mode http\n  bind 127.0.0.71:8080\n  http-request track-sc0 src table mesh/t\n  default_backend bk\n");
    let c = &p.config;
    assert_eq!(c.global.localpeer.as_deref(), Some("fl1"));
    assert_eq!(c.peers.len(), 1);
    assert_eq!(c.peers[0].peers.len(), 2);
    let names: Vec<&str> = c.tables.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["bk", "mesh/t"]);
    assert_eq!(c.tables[1].spec().peers.as_deref(), Some("mesh"));
    assert!(!has(&warns(&p), "localpeer"), "{:?}", warns(&p));
}

#[test]
fn peers_errors() {
    let e = alerts("backend bk\n  mode http\n  server s 127.0.0.1:1\n  stick-table type ip size 10 peers nope\n");
    assert!(has(&e, "unable to find peers 'nope'"), "{e:?}");
    let e = alerts("peers p\n  peer a 1.2.3.4:x\n");
    assert!(has(&e, "'peer' a: invalid address"), "{e:?}");
}
