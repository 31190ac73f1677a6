//! A cheap fuzz test: feeds a few thousand pseudo-random mutations of the
//! corpus files (and of built-in seeds when the corpus is missing) to
//! `parse` and checks that it never panics. Deterministic: a fixed
//! xorshift seed, no dependencies.

use std::path::Path;

use fairlead_config::{parse, Source};

const SEEDS: &[&str] = &[
    "global\n maxconn 10\n nbthread 2\n cpu-map auto:1/1-2 0-1\n log 127.0.0.1 local0\n",
    "defaults\n mode http\n timeout client 5s\n option forwardfor except 10.0.0.0/8 header X if-none\n",
    "frontend f\n bind :80,[::]:81,ipv6@:82 v6only\n default_backend b\nbackend b\n server s 1.1.1.1:80 weight 3 check inter 2s\n",
    "listen l\n bind 127.0.0.1:8000-8002\n balance roundrobin\n server a [::1]:80\n",
    ".if defined(HOME) && streq(\"$HOME\",x) || !feature(X)\n.elif version_atleast(2.4)\n.else\n.endif\n",
    "defaults d\ndefaults e from d\nfrontend x from e\n bind \"${PORT-80}\"\n",
    "resolvers r\n nameserver a 127.0.0.1:53\n hold nx 3s\n timeout retry 1s\nbackend b\n server s app.test:80 resolvers r resolve-prefer ipv4 resolve-net 10.0.0.0/8 init-addr last,none\n server-template w 2-4 _http._tcp.app.test resolvers r\n",
];

/// Tokens spliced in by the mutator: the lexer's special characters and
/// keywords that reach the deeper parsers.
const TOKENS: &[&str] = &[
    "\"",
    "'",
    "\\",
    "\\x",
    "\\x4",
    "$",
    "${",
    "}",
    "${A-",
    "#",
    "\n",
    " ",
    "\t",
    "\r",
    ",",
    ":",
    "[",
    "]",
    "-",
    "/",
    "@",
    "(",
    ")",
    "&&",
    "||",
    "!",
    ".if ",
    ".elif ",
    ".else",
    ".endif",
    ".alert ",
    "bind ",
    "server ",
    "server-template ",
    "resolvers ",
    "init-addr ",
    "frontend ",
    "backend ",
    "listen ",
    "defaults ",
    "global\n",
    "timeout ",
    "option ",
    "no ",
    "from ",
    "99999999999",
    "0",
    "-1",
    "auto:",
    "all",
    "ipv6@",
    "unix@",
    "*:",
    ":::",
    "65536",
    "weight ",
    "cpu-map ",
    "\u{e9}",
    "\0",
];

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn load_inputs() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/haproxy-cfg");
    let mut inputs: Vec<String> = SEEDS.iter().map(|s| s.to_string()).collect();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let mut paths: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "cfg"))
            .collect();
        paths.sort();
        for p in paths {
            if let Ok(b) = std::fs::read(&p) {
                inputs.push(String::from_utf8_lossy(&b).into_owned());
            }
        }
    } else {
        println!(
            "NOTICE: corpus directory {} is missing; fuzzing the built-in seeds only",
            dir.display()
        );
    }
    inputs
}

fn char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn mutate(rng: &mut XorShift, inputs: &[String]) -> String {
    let mut s = inputs[rng.below(inputs.len())].clone();
    for _ in 0..1 + rng.below(8) {
        let at = char_boundary(&s, rng.below(s.len() + 1));
        match rng.below(5) {
            0 => s.insert_str(at, TOKENS[rng.below(TOKENS.len())]),
            1 => {
                let end = char_boundary(&s, at + rng.below(16));
                s.replace_range(at..end, "");
            }
            2 => {
                // Splice a slice of another input.
                let other = &inputs[rng.below(inputs.len())];
                let a = char_boundary(other, rng.below(other.len() + 1));
                let b = char_boundary(other, a + rng.below(200));
                s.insert_str(at, &other[a..b]);
            }
            3 => s.truncate(at),
            _ => {
                let c = char::from(b' ' + rng.below(95) as u8);
                s.insert(at, c);
            }
        }
    }
    s
}

#[test]
fn mutated_inputs_never_panic() {
    let inputs = load_inputs();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let env = |name: &str| match name {
        "HOME" => Some("/root".to_string()),
        "PORT" => Some("8080".to_string()),
        _ => None,
    };
    for i in 0..3000 {
        let text = mutate(&mut rng, &inputs);
        let res = std::panic::catch_unwind(|| {
            let src = [Source {
                name: "fuzz.cfg".into(),
                text: text.clone(),
            }];
            let _ = parse(&src, &env);
        });
        assert!(
            res.is_ok(),
            "iteration {i}: parse panicked on input:\n{text:?}"
        );
    }
}
