//! The map and ACL commands against an in-memory [`AdminApi`]: argument
//! parsing, checks, messages, output formats and payloads.

use super::*;
use crate::api::*;
use crate::session::Mode;
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Fake {
    edits: Mutex<Vec<(String, PatEdit)>>,
}

fn refs() -> Vec<PatRefInfo> {
    vec![
        PatRefInfo {
            id: 0,
            path: "/etc/haproxy/hosts.map".into(),
            map: true,
            acl: false,
            two_column: true,
            curr_ver: 0,
            next_ver: 0,
            entry_cnt: 2,
        },
        PatRefInfo {
            id: 1,
            path: "/etc/haproxy/bad.acl".into(),
            map: false,
            acl: true,
            two_column: false,
            curr_ver: 3,
            next_ver: 5,
            entry_cnt: 1,
        },
    ]
}

impl AdminApi for Fake {
    fn info(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    fn version(&self) -> String {
        "0".into()
    }
    fn stat(&self, _: &StatRequest) -> Result<String, String> {
        Ok(String::new())
    }
    fn backends(&self) -> Vec<BackendInfo> {
        Vec::new()
    }
    fn server_change(&self, _: &ServerRef, _: ServerChange) -> Result<(), String> {
        Ok(())
    }
    fn sessions(&self) -> Vec<SessionInfo> {
        Vec::new()
    }
    fn shutdown_session(&self, _: u64) -> bool {
        false
    }
    fn pools(&self) -> Vec<PoolInfo> {
        Vec::new()
    }
    fn errors(&self) -> ErrorReport {
        ErrorReport::default()
    }
    fn profiling(&self) -> ProfilingReport {
        ProfilingReport {
            tasks: TasksProfilingState::Off,
            memory: false,
            measured: Default::default(),
            stopped_ago: Default::default(),
            rows: Vec::new(),
        }
    }
    fn set_profiling_tasks(&self, _: TasksProfiling) -> Result<(), String> {
        Ok(())
    }
    fn pattern_refs(&self) -> Vec<PatRefInfo> {
        refs()
    }
    fn pattern_entries(&self, path: &str, version: Option<u32>) -> Vec<PatEntry> {
        if path.ends_with(".acl") || version.is_some_and(|v| v != 0) {
            return Vec::new();
        }
        vec![
            PatEntry {
                id: 0x10000,
                key: "a.example".into(),
                value: Some("be_a".into()),
            },
            PatEntry {
                id: 0x10001,
                key: "b.example".into(),
                value: Some("be b".into()),
            },
        ]
    }
    fn pattern_lookup(&self, _: &str, sample: &str) -> Vec<PatLookup> {
        vec![
            PatLookup {
                method: "str".into(),
                icase: false,
                hit: (sample == "a.example").then(|| PatHit {
                    tree: true,
                    key: "a.example".into(),
                    value: Some(("be_a".into(), "str".into())),
                }),
            },
            PatLookup {
                method: "end".into(),
                icase: true,
                hit: None,
            },
        ]
    }
    fn pattern_edit(&self, path: &str, edit: &PatEdit) -> Result<u32, PatError> {
        self.edits.lock().unwrap().push((path.into(), edit.clone()));
        match edit {
            PatEdit::Prepare => Ok(1),
            PatEdit::Set {
                target: PatTarget::Key(k),
                ..
            }
            | PatEdit::Del {
                target: PatTarget::Key(k),
            } if k == "missing" => Err(PatError::NotFound),
            PatEdit::Set {
                target: PatTarget::Id(_),
                ..
            } => Err(PatError::NotFound),
            PatEdit::Add { rows, .. } if rows[0].0 == "bad" => Err(PatError::Invalid(
                "'bad' is not a valid IPv4 or IPv6 address".into(),
            )),
            _ => Ok(0),
        }
    }
}

fn session(level: Level) -> (Arc<Fake>, Session) {
    let f = Arc::new(Fake::default());
    let s = Session::new(f.clone(), level);
    (f, s)
}

fn run(s: &mut Session, line: &str) -> String {
    s.handle_line(line).output
}

fn edits(f: &Fake) -> Vec<(String, PatEdit)> {
    std::mem::take(&mut *f.edits.lock().unwrap())
}

const MAP: &str = "/etc/haproxy/hosts.map";

#[test]
fn number_parsing_as_haproxy() {
    assert_eq!(str2uic("12x"), 12);
    assert_eq!(str2uic(""), 0);
    assert_eq!(str2uic("4294967297"), 1);
    assert_eq!(atoi("-1"), -1);
    assert_eq!(atoi("7abc"), 7);
    assert_eq!(atoi("x"), 0);
    assert_eq!(parse_target("#0x1f"), Ok(PatTarget::Id(0x1f)));
    assert_eq!(parse_target("#12"), Ok(PatTarget::Key("#12".into())));
    assert_eq!(parse_target("k"), Ok(PatTarget::Key("k".into())));
    assert!(parse_target("#0xzz").unwrap_err().starts_with("Malformed"));
    assert!(parse_target("#0x").is_err());
    assert!(commit_in_range(1, 0, 1));
    assert!(!commit_in_range(0, 0, 1));
    assert!(!commit_in_range(2, 0, 1));
    assert!(commit_in_range(0, u32::MAX, 0), "versions wrap");
}

#[test]
fn payload_lines() {
    assert_eq!(
        payload_rows("k1 v1\nk2 \t value with spaces\n", true).unwrap(),
        [
            ("k1".to_string(), Some("v1".to_string())),
            ("k2".to_string(), Some("value with spaces".to_string())),
        ]
    );
    assert_eq!(
        payload_rows("lonely", true).unwrap_err(),
        "Missing value for key 'lonely'.\n"
    );
    assert_eq!(
        payload_rows("p1\np2 x", false).unwrap(),
        [("p1".to_string(), None), ("p2".to_string(), None)]
    );
}

#[test]
fn show_lists_and_dumps() {
    let (_, mut s) = session(Level::Operator);
    assert_eq!(
        run(&mut s, "show map"),
        "# id (file) description\n0 (/etc/haproxy/hosts.map) pattern loaded from file \
'/etc/haproxy/hosts.map' used by map. curr_ver=0 next_ver=0 entry_cnt=2\n\n"
    );
    assert_eq!(
        run(&mut s, "show acl"),
        "# id (file) description\n1 (/etc/haproxy/bad.acl) pattern loaded from file \
'/etc/haproxy/bad.acl' used by acl. curr_ver=3 next_ver=5 entry_cnt=1\n\n"
    );
    let dump = "0x10000 a.example be_a\n0x10001 b.example be b\n\n";
    assert_eq!(run(&mut s, "show map #0"), dump);
    assert_eq!(run(&mut s, &format!("show map {MAP}")), dump);
    assert_eq!(run(&mut s, "show map @0 #0"), dump);
    assert_eq!(
        run(&mut s, "show map @7 #0"),
        "\n",
        "unknown version: nothing"
    );
    let unknown = "Unknown map identifier. Please use #<id> or <file>.\n\n";
    assert_eq!(run(&mut s, "show map #1"), unknown, "an ACL file");
    assert_eq!(run(&mut s, "show map /nope"), unknown);
    assert_eq!(
        run(&mut s, "show acl #0"),
        "Unknown ACL identifier. Please use #<id> or <file>.\n\n"
    );
}

#[test]
fn get_reports_each_user() {
    let (_, mut s) = session(Level::Operator);
    assert_eq!(
        run(&mut s, "get map #0 a.example"),
        "type=str, case=sensitive, found=yes, idx=tree, key=\"a.example\", value=\"be_a\", \
type=\"str\"\ntype=end, case=insensitive, found=no\n\n"
    );
    assert_eq!(
        run(&mut s, "get acl #0 zzz"),
        "type=str, case=sensitive, match=no\ntype=end, case=insensitive, match=no\n\n"
    );
    assert_eq!(
        run(&mut s, "get map #0"),
        "Missing map identifier and/or key.\n\n"
    );
    assert_eq!(
        run(&mut s, "get acl #9 x"),
        "Unknown ACL identifier. Please use #<id> or <file>.\n\n"
    );
}

#[test]
fn levels() {
    let (f, mut s) = session(Level::Operator);
    assert_eq!(run(&mut s, "add map #0 k v"), "Permission denied\n\n");
    assert_eq!(run(&mut s, "prepare map #0"), "Permission denied\n\n");
    assert!(edits(&f).is_empty());
    let (_, mut u) = session(Level::User);
    assert_eq!(run(&mut u, "show map"), "Permission denied\n\n");
    assert_eq!(run(&mut u, "get map #0 x"), "Permission denied\n\n");
}

#[test]
fn edits_and_messages() {
    let (f, mut s) = session(Level::Admin);
    assert_eq!(run(&mut s, "add map #0 k v"), "\n");
    assert_eq!(run(&mut s, "set map #0 k v2"), "\n");
    assert_eq!(
        run(&mut s, "set map #0 #0x10000 v3"),
        "key or pattern not found.\n\n"
    );
    assert_eq!(run(&mut s, "set map #0 missing v"), "entry not found.\n\n");
    assert_eq!(run(&mut s, "del map #0 missing"), "Key not found.\n\n");
    assert_eq!(run(&mut s, "del map #0 #0x10000"), "\n");
    assert_eq!(
        run(&mut s, "add map #0 bad v"),
        "'bad' is not a valid IPv4 or IPv6 address.\n\n"
    );
    let want = vec![
        PatEdit::Add {
            version: None,
            rows: vec![("k".into(), Some("v".into()))],
        },
        PatEdit::Set {
            target: PatTarget::Key("k".into()),
            value: "v2".into(),
        },
        PatEdit::Set {
            target: PatTarget::Id(0x10000),
            value: "v3".into(),
        },
        PatEdit::Set {
            target: PatTarget::Key("missing".into()),
            value: "v".into(),
        },
        PatEdit::Del {
            target: PatTarget::Key("missing".into()),
        },
        PatEdit::Del {
            target: PatTarget::Id(0x10000),
        },
        PatEdit::Add {
            version: None,
            rows: vec![("bad".into(), Some("v".into()))],
        },
    ];
    let got = edits(&f);
    assert!(got.iter().all(|(p, _)| p == MAP));
    assert_eq!(got.into_iter().map(|(_, e)| e).collect::<Vec<_>>(), want);

    for (cmd, msg) in [
        ("set map #0 k", "'set map' expects three parameters: map identifier, key and value.\n"),
        ("set map #5 k v", "Unknown map identifier. Please use #<id> or <file>.\n"),
        ("set map #0 #0xq v", "Malformed identifier. Please use #<id> or <file>.\n"),
        ("add map #0 k", "'add map' expects three parameters (map identifier, key and value) or one parameter (map identifier) and a payload\n"),
        ("add acl #1", "'add acl' expects two parameters: ACL identifier and pattern.\n"),
        ("add acl #0 x", "This ACL is shared with a map containing samples. You must use the command 'add map' to add values.\n"),
        ("add map @1 #0 k v", "Version number in the future, please use 'prepare map' before.\n"),
        ("add acl @6 #1 x", "Version number in the future, please use 'prepare acl' before.\n"),
        ("del map #0", "This command expects two parameters: map identifier and key.\n"),
        ("del acl #0 k", "Unknown map identifier. Please use #<id> or <file>.\n"),
        ("clear map", "Missing map identifier.\n"),
        ("clear acl @2", "Missing ACL identifier.\n"),
        ("clear acl #0", "Unknown ACL identifier. Please use #<id> or <file>.\n"),
        ("commit map #0", "Missing version number.\n"),
        ("commit map @1", "Missing map identifier.\n"),
        ("commit map @1 #0", "Version number out of range.\n"),
        ("commit acl @3 #1", "Version number out of range.\n"),
        ("prepare acl #0", "Unknown ACL identifier. Please use #<id> or <file>.\n"),
    ] {
        assert_eq!(run(&mut s, cmd), format!("{msg}\n"), "{cmd}");
    }
    assert!(edits(&f).is_empty(), "refused before reaching the process");

    assert_eq!(run(&mut s, "prepare map #0"), "New version created: 1\n\n");
    assert_eq!(run(&mut s, "add acl @5 #1 10.0.0.0/8"), "\n");
    assert_eq!(run(&mut s, "commit acl @5 /etc/haproxy/bad.acl"), "\n");
    assert_eq!(run(&mut s, "clear map @0 #0"), "\n");
    assert_eq!(run(&mut s, "del acl #1 x"), "\n");
    let got: Vec<PatEdit> = edits(&f).into_iter().map(|(_, e)| e).collect();
    assert_eq!(
        got,
        [
            PatEdit::Prepare,
            PatEdit::Add {
                version: Some(5),
                rows: vec![("10.0.0.0/8".into(), None)],
            },
            PatEdit::Commit { version: 5 },
            PatEdit::Clear { version: Some(0) },
            PatEdit::Del {
                target: PatTarget::Key("x".into())
            },
        ]
    );
}

#[test]
fn payloads() {
    let (f, mut s) = session(Level::Admin);
    // Non-interactive: the connection stays open until the empty line.
    let r = s.handle_line("add map #0 <<");
    assert_eq!((r.output.as_str(), r.close), ("", false));
    let r = s.handle_line("k1 v1");
    assert_eq!((r.output.as_str(), r.close), ("", false));
    s.handle_line("k2 value with spaces\r");
    let r = s.handle_line("");
    assert_eq!((r.output.as_str(), r.close), ("\n", true));
    assert_eq!(
        edits(&f),
        [(
            MAP.to_string(),
            PatEdit::Add {
                version: None,
                rows: vec![
                    ("k1".into(), Some("v1".into())),
                    ("k2".into(), Some("value with spaces".into())),
                ],
            }
        )]
    );

    // Prompt mode: `+ ` while gathering; commands before `<<` run first.
    let (f, mut s) = session(Level::Admin);
    run(&mut s, "prompt");
    assert_eq!(s.mode(), Mode::Prompt);
    assert_eq!(
        run(&mut s, "show cli level;add map @0 #0 <<"),
        "admin\n\n+ "
    );
    assert_eq!(run(&mut s, "lonely"), "+ ");
    assert_eq!(run(&mut s, ""), "Missing value for key 'lonely'.\n\n> ");
    assert!(edits(&f).is_empty());
    assert_eq!(run(&mut s, "add map #0 <<"), "+ ");
    assert_eq!(run(&mut s, ""), "\n> ", "an empty payload adds nothing");
    assert!(edits(&f).is_empty());

    // A payload needs the admin level too.
    let (f, mut s) = session(Level::Operator);
    s.handle_line("add map #0 <<");
    s.handle_line("k v");
    assert_eq!(s.handle_line("").output, "Permission denied\n\n");
    assert!(edits(&f).is_empty());
}

#[test]
fn help_lists_the_commands() {
    let (_, mut s) = session(Level::Admin);
    let help = run(&mut s, "help");
    for u in [
        "show map [[@<ver>] <map>]",
        "add map [@<ver>] <map> <key> <val>",
        "commit acl @<ver> <acl>",
    ] {
        assert!(help.contains(u), "{help}");
    }
}
