//! `init-addr` against the real binary: `last` takes the address the
//! server-state file saved, and the methods are tried in the order given
//! (`last,libc` and `libc,last` pick different addresses; `none` starts
//! the server in maintenance; a list where nothing works stops the start).

mod common;
use common::*;
use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

const HEADER: &str = "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n";

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "fairlead-initaddr-{tag}-{}-{}",
        std::process::id(),
        test_ip()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One line of `show servers state` for server `name` of `bk`.
fn state_line(sock: &Path, name: &str) -> Option<Vec<String>> {
    let out = ask(sock, "show servers state bk");
    out.lines()
        .map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
        .find(|f| f.get(3).map(String::as_str) == Some(name))
}

/// A configuration whose backend `bk` loads `dir/servers.state`, with an
/// admin socket at `dir/admin.sock`, and the given servers.
fn cfg(dir: &Path, bind: SocketAddr, servers: &str) -> String {
    format!(
        "global\n    stats socket {}/admin.sock level admin\n    server-state-file {}/servers.state\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n    default_backend bk\n\
backend bk\n    load-server-state-from-file global\n{servers}\n",
        dir.display(),
        dir.display()
    )
}

#[test]
fn init_addr_last_and_the_order_of_methods() {
    let ip = test_ip();
    let (_t, a) = term(ip, "A");
    let d = dir("order");
    let sock = d.join("admin.sock");
    // The file saved A's address for every server.
    let mut file = HEADER.to_string();
    for (id, name) in ["last", "lastlibc", "libclast", "lastnone"]
        .iter()
        .enumerate()
    {
        file.push_str(&format!(
            "2 bk {} {name} {} 2 0 1 1 5 1 0 0 0 0 0 0 - {} - 0 0 - - 0\n",
            id + 1,
            a.ip(),
            a.port()
        ));
    }
    std::fs::write(d.join("servers.state"), &file).unwrap();
    let port = a.port();
    let servers = format!(
        "    server last nowhere.invalid:{port} init-addr last\n\
    server lastlibc localhost:{port} init-addr last,libc\n\
    server libclast localhost:{port} init-addr libc,last\n\
    server lastnone nowhere.invalid:{port} init-addr last,none\n\
    server none nowhere.invalid:{port} init-addr last,none\n\
    server fixed nowhere.invalid:{port} init-addr last,libc,10.9.8.7"
    );
    let bind = free_addr(ip);
    let _p = Proxy::start(&cfg(&d, bind, &servers), &[bind]);
    wait_until("cli socket", || UnixStream::connect(&sock).is_ok());
    let addr = |n: &str| state_line(&sock, n).map(|l| (l[4].clone(), l[6].clone()));
    let saved = a.ip().to_string();
    // (address, admin state): `last` first takes the saved address.
    assert_eq!(addr("last"), Some((saved.clone(), "0".into())));
    assert_eq!(addr("lastlibc"), Some((saved.clone(), "0".into())));
    assert_eq!(addr("lastnone"), Some((saved.clone(), "0".into())));
    // `libc` first: the name's own address.
    assert_eq!(addr("libclast"), Some(("127.0.0.1".into(), "0".into())));
    // Nothing saved for these: `none` (maintenance), then a fixed address.
    assert_eq!(addr("none").map(|a| a.1), Some("32".into()));
    assert_eq!(addr("fixed"), Some(("10.9.8.7".into(), "0".into())));
    // Traffic goes to the saved address.
    let r = get(bind, "/");
    assert_eq!(r.header("x-served-by"), Some("A"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn init_addr_last_alone_without_a_saved_address_stops_the_start() {
    let d = dir("alone");
    std::fs::write(d.join("servers.state"), HEADER).unwrap();
    let bind = free_addr(test_ip());
    let path = write_cfg(&cfg(
        &d,
        bind,
        "    server s1 nowhere.invalid:80 init-addr last",
    ));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fairlead"))
        .arg("-f")
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("no method found to resolve address 'nowhere.invalid'"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
