//! Map converters (`map_<match>[_<out>](file[,default])`).
//!
//! A map is a two-column pattern reference ([`PatRef`]) matched with one
//! method; the winning entry's value, parsed for the output type when the
//! file is loaded (and again on every run-time edit), is the converter's
//! output. No match gives the default value, else the converter fails.
//! `map_regm` substitutes `\1`.. in the value with the regex's captures.

use crate::pattern::parse::{compile_out, exp_replace, OutVal};
use crate::pattern::refs::RefUser;
use crate::pattern::{input_of, Input, Key, Method, OutKind, PatRef, Registry, UserCfg};
use crate::sample::{Sample, SmpType};
use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;

/// A compiled map converter.
#[derive(Debug)]
pub struct MapConv {
    method: Method,
    regm: bool,
    out: OutKind,
    pref: Arc<PatRef>,
    user: Arc<RefUser>,
    default: Option<Sample<'static>>,
}

/// The match part of a converter name: its method and whether it is
/// `regm`.
fn match_kind(m: &str) -> Option<(Method, bool)> {
    Some(match m {
        "str" => (Method::Str, false),
        "beg" => (Method::Beg, false),
        "sub" => (Method::Sub, false),
        "dir" => (Method::Dir, false),
        "dom" => (Method::Dom, false),
        "end" => (Method::End, false),
        "reg" => (Method::Reg, false),
        "regm" => (Method::Reg, true),
        "int" => (Method::Int, false),
        "ip" => (Method::Ip, false),
        _ => return None,
    })
}

impl MapConv {
    /// Parses a map converter. `name` is the converter name (`map`,
    /// `map_str`, `map_beg_int`, `map_ip_str`, ...), `args` its arguments
    /// (file, optional default). `Ok(None)`: `name` is not a map converter.
    ///
    /// The names are HAProxy 2.6's: `map`, `map_<match>` with match in
    /// `str beg sub dir dom end reg regm int ip`, and `map_<match>_int` /
    /// `map_<match>_ip` for every match but `regm`. The file is read once
    /// per path (relative paths as given); a value that does not parse for
    /// the output type is an error naming the file and line.
    pub fn parse(name: &str, args: &[String], reg: &Registry) -> Result<Option<MapConv>, String> {
        let rest = match name {
            "map" => "str",
            _ => match name.strip_prefix("map_") {
                Some(r) => r,
                None => return Ok(None),
            },
        };
        let (m, out) = match rest.split_once('_') {
            Some((m, "int")) => (m, OutKind::Int),
            Some((m, "ip")) => (m, OutKind::Ip),
            Some(_) => return Ok(None),
            None => (rest, OutKind::Str),
        };
        let Some((method, regm)) = match_kind(m) else {
            return Ok(None);
        };
        if regm && out != OutKind::Str {
            return Ok(None);
        }
        let (file, def) = match args {
            [f] => (f, None),
            [f, d] => (f, Some(d)),
            [] => {
                return Err(format!(
                    "converter '{name}' expects a map file name and an optional default value"
                ))
            }
            _ => {
                return Err(format!(
                    "too many arguments to converter '{name}' (at most 2: file, default value)"
                ))
            }
        };
        if file.is_empty() {
            return Err(format!("converter '{name}': missing map file name"));
        }
        let pref = reg.load_file(file, true)?;
        let cfg = UserCfg {
            method,
            icase: false,
            no_dns: true,
            dotted: false,
            out: Some(out),
        };
        let user = pref.attach(cfg, true)?;
        let default = match def {
            None => None,
            Some(d) => {
                let o = compile_out(Some(out), Some(d.as_bytes()))
                    .map_err(|e| format!("converter '{name}': invalid default value: {e}"))?;
                Some(output(out, o, Some(d.as_bytes())))
            }
        };
        Ok(Some(MapConv {
            method,
            regm,
            out,
            pref,
            user,
            default,
        }))
    }

    /// The converter's output type (str, sint or ipv4/ipv6 as `Addr`).
    pub fn out_type(&self) -> SmpType {
        match self.out {
            OutKind::Str => SmpType::Str,
            OutKind::Int => SmpType::Sint,
            OutKind::Ip => SmpType::Addr,
        }
    }

    /// The input type the map's match method needs.
    pub fn in_type(&self) -> SmpType {
        match self.method {
            Method::Int => SmpType::Sint,
            Method::Ip => SmpType::Addr,
            _ => SmpType::Str,
        }
    }

    /// The match method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The map file's reference (for the management socket).
    pub fn pattern_ref(&self) -> &Arc<PatRef> {
        &self.pref
    }

    /// Looks `s` up: the value of the winning entry, else the default,
    /// else `None`.
    pub fn apply<'a>(&self, s: Sample<'a>) -> Option<Sample<'a>> {
        let s = s.cast(self.in_type())?;
        let inp = input_of(&s)?;
        let idx = self.user.index.load();
        let Some((it, key)) = idx.lookup(&inp) else {
            return self.default.clone();
        };
        let value = it.e.value();
        if self.regm {
            if let (Some(Key::Reg(re)), Input::Bytes(b)) = (key, inp) {
                let caps = re.captures(b)?;
                return exp_replace(b, value.unwrap_or_default(), &caps).map(Sample::owned_str);
            }
        }
        Some(output(self.out, it.out, value))
    }
}

/// The sample for a parsed value.
fn output(out: OutKind, o: OutVal, raw: Option<&[u8]>) -> Sample<'static> {
    match (out, o) {
        (OutKind::Int, OutVal::Sint(i)) => Sample::Sint(i),
        (OutKind::Ip, OutVal::Ip(IpAddr::V4(a))) => Sample::Ipv4(a),
        (OutKind::Ip, OutVal::Ip(IpAddr::V6(a))) => Sample::Ipv6(a),
        _ => Sample::Str(Cow::Owned(raw.unwrap_or_default().to_vec())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::Ipv4Addr;

    fn tmp(name: &str, body: &str) -> String {
        let dir = std::env::temp_dir().join(format!("fairlead-map-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::File::create(&p)
            .unwrap()
            .write_all(body.as_bytes())
            .unwrap();
        p.to_string_lossy().into_owned()
    }

    fn conv(name: &str, args: &[&str], reg: &Registry) -> MapConv {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        MapConv::parse(name, &args, reg).unwrap().unwrap()
    }

    fn s(v: &str) -> Sample<'_> {
        Sample::str(v.as_bytes())
    }

    #[test]
    fn names() {
        let reg = Registry::default();
        let f = tmp("names.map", "a 1\n");
        let fip = tmp("names-ip.map", "10.0.0.1 1\n");
        let fint = tmp("names-int.map", "5 x\n");
        let a = |n: &str, f: &str| MapConv::parse(n, &[f.to_string()], &reg);
        assert!(a("map", &f).unwrap().is_some());
        assert!(a("map_beg_int", &f).unwrap().is_some());
        assert!(a("map_ip", &fip).unwrap().is_some());
        assert!(a("map_ip", &f).is_err(), "'a' is not an address");
        assert!(a("map_str_ip", &f).is_err(), "'1' is not an address");
        assert!(a("map_regm_int", &f).unwrap().is_none());
        assert!(a("map_str_str", &f).unwrap().is_none());
        assert!(a("map_foo", &f).unwrap().is_none());
        assert!(a("mapx", &f).unwrap().is_none());
        assert!(MapConv::parse("map", &[], &reg).is_err());
        let m = a("map_ip_int", &fip).unwrap().unwrap();
        assert_eq!((m.in_type(), m.out_type()), (SmpType::Addr, SmpType::Sint));
        let m = a("map_int", &fint).unwrap().unwrap();
        assert_eq!((m.in_type(), m.out_type()), (SmpType::Sint, SmpType::Str));
        assert_eq!(
            m.apply(Sample::Sint(5)),
            Some(Sample::owned_str(b"x".to_vec()))
        );
        assert_eq!(
            m.apply(Sample::str(b"5")),
            Some(Sample::owned_str(b"x".to_vec()))
        );
        let err = MapConv::parse("map", &["/nonexistent/x.map".into()], &reg).unwrap_err();
        assert!(err.contains("/nonexistent/x.map"), "{err}");
    }

    #[test]
    fn beg_longest_and_default() {
        let reg = Registry::default();
        let f = tmp("beg.map", "# comment\n/api  v1\n\n/api/v2\tv2  \n");
        let m = conv("map_beg", &[&f, "none"], &reg);
        assert_eq!(
            m.apply(s("/api/v2/x")),
            Some(Sample::owned_str(b"v2".to_vec()))
        );
        assert_eq!(
            m.apply(s("/api/v1")),
            Some(Sample::owned_str(b"v1".to_vec()))
        );
        assert_eq!(
            m.apply(s("/other")),
            Some(Sample::owned_str(b"none".to_vec()))
        );
        let m = conv("map_beg", &[&f], &reg);
        assert_eq!(m.apply(s("/other")), None);
    }

    #[test]
    fn ip_finest_and_int_out() {
        let reg = Registry::default();
        let f = tmp(
            "ip.map",
            "10.0.0.0/8 1\n10.1.0.0/16 2\n::ffff:10.1.2.0/120 3\n2001:db8::/32 4\n",
        );
        let m = conv("map_ip_int", &[&f, "0"], &reg);
        assert_eq!(
            m.apply(Sample::Ipv4(Ipv4Addr::new(10, 1, 2, 3))),
            Some(Sample::Sint(2))
        );
        assert_eq!(
            m.apply(Sample::Ipv4(Ipv4Addr::new(10, 2, 2, 3))),
            Some(Sample::Sint(1))
        );
        assert_eq!(
            m.apply(Sample::Ipv4(Ipv4Addr::new(11, 2, 2, 3))),
            Some(Sample::Sint(0))
        );
        assert_eq!(m.apply(s("2001:db8::1")), Some(Sample::Sint(4)));
        assert_eq!(
            m.apply(Sample::Ipv6("::ffff:10.1.2.3".parse().unwrap())),
            Some(Sample::Sint(3))
        );
        assert_eq!(
            m.apply(Sample::Ipv6("::ffff:10.9.2.3".parse().unwrap())),
            Some(Sample::Sint(1))
        );
        let f = tmp("bad.map", "a 1\nb x2\n");
        let err = MapConv::parse("map_str_int", std::slice::from_ref(&f), &reg).unwrap_err();
        assert!(err.contains("line 2") && err.contains(&f), "{err}");
        let f = tmp("ipout.map", "a 10.0.0.1\nb ::1\n");
        let m = conv("map_str_ip", &[&f], &reg);
        assert_eq!(
            m.apply(s("a")),
            Some(Sample::Ipv4(Ipv4Addr::new(10, 0, 0, 1)))
        );
        assert_eq!(m.apply(s("b")), Some(Sample::Ipv6("::1".parse().unwrap())));
    }

    #[test]
    fn regm_backrefs() {
        let reg = Registry::default();
        let f = tmp(
            "regm.map",
            "^/user/([0-9]+)/(.*)$ /u?id=\\1&p=\\2\n^/x \\x41\\9z\n",
        );
        let m = conv("map_regm", &[&f], &reg);
        assert_eq!(
            m.apply(s("/user/42/edit")),
            Some(Sample::owned_str(b"/u?id=42&p=edit".to_vec()))
        );
        assert_eq!(m.apply(s("/x")), Some(Sample::owned_str(b"Az".to_vec())));
        let m = conv("map_reg", &[&f], &reg);
        assert_eq!(
            m.apply(s("/user/42/edit")),
            Some(Sample::owned_str(b"/u?id=\\1&p=\\2".to_vec()))
        );
    }

    #[test]
    fn runtime_edits_visible() {
        let reg = Registry::default();
        let f = tmp("edit.map", "a 1\n");
        let m = conv("map_str_int", &[&f], &reg);
        let m2 = conv("map_beg", &[&f], &reg);
        assert_eq!(m.apply(s("a")), Some(Sample::Sint(1)));
        assert!(
            reg.add(&f, "b", Some("x")).is_err(),
            "not an int for map_str_int"
        );
        assert_eq!(reg.add(&f, "b", Some("2")).map(|_| ()), Ok(()));
        assert_eq!(m.apply(s("b")), Some(Sample::Sint(2)));
        assert_eq!(m2.apply(s("bcd")), Some(Sample::owned_str(b"2".to_vec())));
        assert_eq!(reg.set(&f, "a", "5"), Ok(1));
        assert_eq!(m.apply(s("a")), Some(Sample::Sint(5)));
        assert!(reg.set(&f, "a", "zz").is_err());
        assert_eq!(reg.del(&f, "a"), Ok(1));
        assert_eq!(m.apply(s("a")), None);
        let v = reg.prepare(&f).unwrap();
        reg.add_versioned(&f, v, "c", Some("3")).unwrap();
        assert_eq!(m.apply(s("c")), None);
        assert_eq!(m.apply(s("b")), Some(Sample::Sint(2)));
        reg.commit(&f, v).unwrap();
        assert_eq!(m.apply(s("c")), Some(Sample::Sint(3)));
        assert_eq!(m.apply(s("b")), None);
        assert_eq!(
            reg.get(&f, "cx").unwrap(),
            None,
            "first user is map_str_int"
        );
        assert_eq!(
            reg.get(&f, "c").unwrap(),
            Some(("c".into(), Some("3".into())))
        );
        let snap = reg.snapshot();
        let reg2 = Registry::default();
        let m3 = conv("map_str_int", &[&f], &reg2);
        assert_eq!(m3.apply(s("a")), Some(Sample::Sint(1)), "file content");
        assert!(reg2.restore(&snap).is_empty());
        assert_eq!(m3.apply(s("c")), Some(Sample::Sint(3)));
        assert_eq!(m3.apply(s("a")), None);
    }
}
