//! Fuzzes pattern and map files. After a 4-byte seed, the input is written
//! as a file, loaded with `Registry::load_file` as an ACL file (one
//! column) and as a map file (two columns), compiled for every match
//! method (with and without `-i`) and every map converter, and looked up
//! with samples made from the file's own words and from the seed. Run-time
//! edits (`add`, `set`, `del`, `prepare`/`commit`, the `set-map` family)
//! are applied between lookups. Errors are fine, panics are not.
#![no_main]

use fairlead_rules::map::MapConv;
use fairlead_rules::pattern::{Method, PatRef, PatternSet, Registry};
use fairlead_rules::Sample;
use libfuzzer_sys::fuzz_target;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

const METHODS: [Method; 13] = [
    Method::Found,
    Method::Bool,
    Method::Int,
    Method::Ip,
    Method::Str,
    Method::Beg,
    Method::Sub,
    Method::End,
    Method::Reg,
    Method::Dir,
    Method::Dom,
    Method::Len,
    Method::Bin,
];

const MAPS: &[&str] = &[
    "map", "map_str", "map_beg", "map_sub", "map_dir", "map_dom", "map_end", "map_reg", "map_regm",
    "map_int", "map_ip", "map_str_int", "map_beg_int", "map_sub_int", "map_dir_int",
    "map_dom_int", "map_end_int", "map_reg_int", "map_int_int", "map_ip_int", "map_str_ip",
    "map_beg_ip", "map_int_ip", "map_ip_ip",
];

/// xorshift64*: the lookups and edits the seed picks.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn pick<'a>(&mut self, v: &'a [String]) -> &'a str {
        if v.is_empty() {
            ""
        } else {
            &v[self.next() as usize % v.len()]
        }
    }
}

fn path() -> String {
    std::env::temp_dir()
        .join(format!("fairlead-fuzz-pattern-{}", std::process::id()))
        .to_string_lossy()
        .into_owned()
}

/// Words of the file (and pieces of them) as strings, for samples, keys
/// and values.
fn tokens(body: &[u8], rng: &mut Rng) -> Vec<String> {
    let text = String::from_utf8_lossy(body);
    let mut out: Vec<String> = Vec::new();
    for w in text.split_whitespace().take(16) {
        out.push(w.to_string());
        let n = w.chars().count();
        if n > 1 {
            let cut = 1 + rng.next() as usize % (n - 1);
            out.push(w.chars().take(cut).collect());
            out.push(w.chars().skip(cut).collect());
            out.push(format!("{w}/x.y:{}", rng.next() % 100));
            out.push(w.to_ascii_uppercase());
        }
    }
    for l in text.lines().take(4) {
        out.push(l.to_string());
    }
    out.push(String::new());
    out
}

fn samples(tokens: &[String], rng: &mut Rng) -> Vec<Sample<'static>> {
    let mut v: Vec<Sample<'static>> = tokens
        .iter()
        .map(|t| Sample::owned_str(t.as_bytes().to_vec()))
        .collect();
    for _ in 0..3 {
        let r = rng.next();
        v.push(Sample::Sint(r as i64 >> (r % 60)));
        v.push(Sample::Ipv4(Ipv4Addr::from(r as u32)));
        v.push(Sample::Ipv6(Ipv6Addr::from(
            (u128::from(r) << 64) | u128::from(rng.next()),
        )));
        v.push(Sample::Ipv6(Ipv4Addr::from(r as u32).to_ipv6_mapped()));
        v.push(Sample::Bool(r & 1 == 0));
        v.push(Sample::Bin(r.to_be_bytes()[..(r % 9) as usize].to_vec().into()));
    }
    // At most 32, picked by the seed: lookups dominate the run time.
    while v.len() > 32 {
        let i = rng.next() as usize % v.len();
        v.swap_remove(i);
    }
    v
}

fn edits(r: &PatRef, map: bool, toks: &[String], rng: &mut Rng) {
    for _ in 0..(rng.next() % 8) {
        let k = rng.pick(toks).to_string();
        let v = rng.pick(toks).to_string();
        let val = map.then_some(v.as_str());
        match rng.next() % 10 {
            0 => drop(r.add(&k, val)),
            1 => drop(r.set(&k, &v)),
            2 => drop(r.del(&k)),
            3 => {
                let ver = r.prepare();
                for _ in 0..(rng.next() % 4) {
                    let k = rng.pick(toks);
                    let _ = r.add_versioned(ver, k, val);
                }
                if rng.next() % 4 != 0 {
                    let _ = r.commit(ver);
                } else {
                    r.clear_version(ver);
                }
            }
            4 => drop(r.set_or_add(&k, &v)),
            5 => drop(r.add_unique(&k)),
            6 => drop(r.delete_key(&k)),
            7 => drop(r.get(&k)),
            8 => drop(r.validate(&k, val)),
            _ => {
                let e = r.entries();
                if let Some(e) = e.get(rng.next() as usize % e.len().max(1)) {
                    let target = format!("#{}", e.id_hex());
                    let _ = r.del(&target);
                }
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (seed, body) = data.split_at(4);
    let mut rng = Rng(u64::from(u32::from_le_bytes(seed.try_into().unwrap())) << 1 | 1);
    let path = path();
    if std::fs::write(&path, body).is_err() {
        return;
    }
    let toks = tokens(body, &mut rng);
    let smp = samples(&toks, &mut rng);

    // As an ACL file (`-f`), for every method, with and without `-i`.
    let reg = Registry::default();
    if let Ok(r) = reg.load_file(&path, false) {
        let mut sets = Vec::new();
        for m in METHODS {
            for icase in [false, true] {
                if icase && !m.honours_case_flag() {
                    continue;
                }
                let mut b = PatternSet::builder(m).no_dns(true).flag_ignore_case(icase);
                b.add_file(r.clone());
                if let Ok(set) = b.build() {
                    sets.push(set);
                }
            }
        }
        for round in 0..2 {
            for set in &sets {
                for s in &smp {
                    let _ = set.matches(s);
                    let _ = set.lookup(s);
                }
            }
            if round == 0 {
                edits(&r, false, &toks, &mut rng);
            }
        }
        for t in toks.iter().take(8) {
            let _ = reg.get(&path, t);
        }
        let _ = reg.list();
    }

    // As a map file, for every map converter, with and without a default.
    let reg = Registry::default();
    if let Ok(r) = reg.load_file(&path, true) {
        let mut convs: Vec<MapConv> = Vec::new();
        for name in MAPS {
            for def in [None, Some("7")] {
                let mut args = vec![path.clone()];
                args.extend(def.map(String::from));
                if let Ok(Some(c)) = MapConv::parse(name, &args, &reg) {
                    convs.push(c);
                }
            }
        }
        for round in 0..2 {
            for c in &convs {
                for s in &smp {
                    let _ = c.apply(s.clone());
                }
            }
            if round == 0 {
                edits(&r, true, &toks, &mut rng);
            }
        }
        let snap = reg.snapshot();
        let _ = reg.restore(&snap);
        let _: Arc<PatRef> = r;
    }
});
