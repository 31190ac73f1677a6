//! The DNS options of a `server` or `server-template` line (HAProxy 2.6
//! `configuration.txt` section 5.2): `resolvers`, `resolve-prefer`,
//! `resolve-net`, `resolve-opts` and `init-addr`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Which address family a server prefers (`resolve-prefer`). It picks the
/// query type (AAAA or A, the other one being asked when the first fails)
/// and, among the answers, the family chosen first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Family {
    /// `ipv4`: A records.
    Ipv4,
    /// `ipv6`: AAAA records. Default is ipv6, as in HAProxy.
    #[default]
    Ipv6,
}

impl Family {
    /// Whether `ip` is of this family.
    pub fn matches(self, ip: &IpAddr) -> bool {
        matches!(
            (self, ip),
            (Family::Ipv4, IpAddr::V4(_)) | (Family::Ipv6, IpAddr::V6(_))
        )
    }

    /// The other family.
    pub fn other(self) -> Family {
        match self {
            Family::Ipv4 => Family::Ipv6,
            Family::Ipv6 => Family::Ipv4,
        }
    }
}

/// Parses a `resolve-prefer` value: `ipv4` or `ipv6`.
pub fn parse_resolve_prefer(value: &str) -> Result<Family, String> {
    match value {
        "ipv4" => Ok(Family::Ipv4),
        "ipv6" => Ok(Family::Ipv6),
        other => Err(format!(
            "'resolve-prefer' expects 'ipv4' or 'ipv6' but got '{other}'"
        )),
    }
}

/// A network of `resolve-net`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    /// The network address (host bits cleared).
    pub addr: IpAddr,
    /// The prefix length: 0 to 32 for IPv4, 0 to 128 for IPv6.
    pub prefix: u8,
}

impl Cidr {
    /// Whether `ip` is in this network. Families never mix.
    pub fn contains(&self, ip: &IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = mask_u32(self.prefix);
                u32::from(net) & mask == u32::from(*ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = mask_u128(self.prefix);
                u128::from(net) & mask == u128::from(*ip) & mask
            }
            _ => false,
        }
    }
}

fn mask_u32(prefix: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(prefix.min(32)))
        .unwrap_or(0)
}

fn mask_u128(prefix: u8) -> u128 {
    u128::MAX
        .checked_shl(128 - u32::from(prefix.min(128)))
        .unwrap_or(0)
}

/// Parses one network: `ADDR`, `ADDR/LEN` or, for IPv4, `ADDR/MASK`.
pub fn parse_cidr(word: &str) -> Result<Cidr, String> {
    let bad = || format!("'resolve-net': invalid network '{word}'");
    let (addr, len) = match word.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (word, None),
    };
    let addr: IpAddr = addr.parse().map_err(|_| bad())?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let prefix = match len {
        None => max,
        Some(l) => match l.parse::<u8>() {
            Ok(p) if p <= max => p,
            Ok(_) => return Err(bad()),
            Err(_) => match (addr, l.parse::<Ipv4Addr>()) {
                (IpAddr::V4(_), Ok(mask)) => {
                    let m = u32::from(mask);
                    if m.leading_ones() + m.trailing_zeros() != 32 {
                        return Err(bad());
                    }
                    // leading_ones() is at most 32, so it fits in a u8.
                    u8::try_from(m.leading_ones()).map_err(|_| bad())?
                }
                _ => return Err(bad()),
            },
        },
    };
    let addr = match addr {
        IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask_u32(prefix))),
        IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask_u128(prefix))),
    };
    Ok(Cidr { addr, prefix })
}

/// Parses a `resolve-net` value: networks separated by commas.
pub fn parse_resolve_net(value: &str) -> Result<Vec<Cidr>, String> {
    value.split(',').map(parse_cidr).collect()
}

/// `resolve-opts` flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResolveOpts {
    /// `allow-dup-ip` (cleared by `prevent-dup-ip`): servers of one backend
    /// resolving the same name may share an address. Default is false: an
    /// address already used by another server of the backend is not taken.
    pub allow_dup_ip: bool,
    /// `ignore-weight`: SRV weights leave the server's weight alone.
    /// Default is false.
    pub ignore_weight: bool,
}

/// Parses a `resolve-opts` value: `allow-dup-ip`, `ignore-weight`,
/// `prevent-dup-ip`, separated by commas; later ones win.
pub fn parse_resolve_opts(value: &str) -> Result<ResolveOpts, String> {
    let mut opts = ResolveOpts::default();
    for opt in value.split(',') {
        match opt {
            "allow-dup-ip" => opts.allow_dup_ip = true,
            "prevent-dup-ip" => opts.allow_dup_ip = false,
            "ignore-weight" => opts.ignore_weight = true,
            other => {
                return Err(format!(
                    "'resolve-opts' : unknown resolve-opts option '{other}', supported methods are 'allow-dup-ip', 'ignore-weight', and 'prevent-dup-ip'."
                ))
            }
        }
    }
    Ok(opts)
}

/// One `init-addr` method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitAddrMethod {
    /// `last`: the address saved in the server-state file.
    Last,
    /// `libc`: the system resolver, at startup.
    Libc,
    /// `none`: start without an address, in maintenance, until DNS
    /// resolution gives one.
    None,
    /// A fixed address.
    Ip(IpAddr),
}

/// The most methods HAProxy keeps in one `init-addr` list.
pub const MAX_INIT_ADDR_METHODS: usize = 10;

/// Parses an `init-addr` value: `last`, `libc`, `none` or an address,
/// separated by commas, tried in order. At most one address.
pub fn parse_init_addr(value: &str) -> Result<Vec<InitAddrMethod>, String> {
    let mut methods = Vec::new();
    for word in value.split(',') {
        let method = match word {
            "last" => InitAddrMethod::Last,
            "libc" => InitAddrMethod::Libc,
            "none" => InitAddrMethod::None,
            other => match other.parse::<IpAddr>() {
                Ok(ip) => {
                    if methods.iter().any(|m| matches!(m, InitAddrMethod::Ip(_))) {
                        return Err(format!(
                            "'init-addr' : initial address already specified, cannot add '{other}'."
                        ));
                    }
                    InitAddrMethod::Ip(ip)
                }
                Err(_) => {
                    return Err(format!(
                        "'init-addr' : unknown init-addr method '{other}', supported methods are 'libc', 'last', 'none'."
                    ))
                }
            },
        };
        if methods.len() == MAX_INIT_ADDR_METHODS {
            return Err(format!(
                "'init-addr' : too many init-addr methods when trying to add '{word}'"
            ));
        }
        methods.push(method);
    }
    Ok(methods)
}

/// The `init-addr` list in force: the configured one, else `last,libc`,
/// plus `none` when the server has `resolvers` (so that a name not
/// resolvable at startup does not stop the load), as HAProxy does.
pub fn effective_init_addr(
    configured: Option<&[InitAddrMethod]>,
    has_resolvers: bool,
) -> Vec<InitAddrMethod> {
    match configured {
        Some(m) if !m.is_empty() => m.to_vec(),
        _ => {
            let mut m = vec![InitAddrMethod::Last, InitAddrMethod::Libc];
            if has_resolvers {
                m.push(InitAddrMethod::None);
            }
            m
        }
    }
}

/// What `init-addr` decided at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InitAddrOutcome {
    /// The server starts with this address, found by this method. The
    /// warning is set when earlier methods failed and a fixed address was
    /// used ("could not resolve address 'NAME', falling back to configured
    /// address.").
    Addr {
        ip: IpAddr,
        method: InitAddrMethod,
        warning: Option<String>,
    },
    /// `none`: the server starts without an address, in maintenance. The
    /// warning is set when earlier methods failed ("could not resolve
    /// address 'NAME', disabling server.").
    Maintenance { warning: Option<String> },
    /// No method worked: a fatal configuration error.
    Failed(String),
}

/// Applies the `init-addr` methods in order: `last` uses `last`, `libc`
/// calls `libc(name)`, the first that gives an address wins.
pub fn resolve_init_addr(
    methods: &[InitAddrMethod],
    name: &str,
    last: Option<IpAddr>,
    mut libc: impl FnMut(&str) -> Option<IpAddr>,
) -> InitAddrOutcome {
    let mut failed = false;
    for method in methods {
        match method {
            InitAddrMethod::Last => match last {
                Some(ip) => {
                    return InitAddrOutcome::Addr {
                        ip,
                        method: *method,
                        warning: None,
                    }
                }
                None => continue,
            },
            InitAddrMethod::Libc => match libc(name) {
                Some(ip) => {
                    return InitAddrOutcome::Addr {
                        ip,
                        method: *method,
                        warning: None,
                    }
                }
                None => failed = true,
            },
            InitAddrMethod::None => {
                let warning = failed
                    .then(|| format!("could not resolve address '{name}', disabling server."));
                return InitAddrOutcome::Maintenance { warning };
            }
            InitAddrMethod::Ip(ip) => {
                let warning = failed.then(|| {
                    format!(
                        "could not resolve address '{name}', falling back to configured address."
                    )
                });
                return InitAddrOutcome::Addr {
                    ip: *ip,
                    method: *method,
                    warning,
                };
            }
        }
    }
    if failed {
        InitAddrOutcome::Failed(format!("could not resolve address '{name}'."))
    } else {
        InitAddrOutcome::Failed(format!("no method found to resolve address '{name}'."))
    }
}

/// The system resolver (`getaddrinfo`), for `init-addr libc`: the first
/// address of the preferred family, else the first address.
pub fn libc_resolve(name: &str, prefer: Family) -> Option<IpAddr> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<IpAddr> = (name, 0u16)
        .to_socket_addrs()
        .ok()?
        .map(|sa| sa.ip())
        .collect();
    addrs
        .iter()
        .find(|ip| prefer.matches(ip))
        .or(addrs.first())
        .copied()
}

/// The DNS options of one server, with their defaults.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerDnsOptions {
    /// `resolvers NAME`: the section resolving this server at run time.
    /// Default is none (the name is resolved once, at startup).
    pub resolvers: Option<String>,
    /// `resolve-prefer`. Default is ipv6.
    pub prefer: Family,
    /// `resolve-net`: preferred networks. Default is none.
    pub nets: Vec<Cidr>,
    /// `resolve-opts`. Default is none set.
    pub opts: ResolveOpts,
    /// `init-addr`. Default is unset, meaning `last,libc` (plus `none`
    /// with `resolvers`); see [`effective_init_addr`].
    pub init_addr: Option<Vec<InitAddrMethod>>,
}

impl ServerDnsOptions {
    /// Applies one server keyword and its value. Returns `Ok(false)` when
    /// `keyword` is not a DNS option (the caller handles it).
    pub fn parse_keyword(&mut self, keyword: &str, value: Option<&str>) -> Result<bool, String> {
        let known = [
            "resolvers",
            "resolve-prefer",
            "resolve-net",
            "resolve-opts",
            "init-addr",
        ];
        if !known.contains(&keyword) {
            return Ok(false);
        }
        let value = value
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("'{keyword}' expects an argument"))?;
        match keyword {
            "resolvers" => self.resolvers = Some(value.to_string()),
            "resolve-prefer" => self.prefer = parse_resolve_prefer(value)?,
            "resolve-net" => self.nets = parse_resolve_net(value)?,
            "resolve-opts" => self.opts = parse_resolve_opts(value)?,
            _ => self.init_addr = Some(parse_init_addr(value)?),
        }
        Ok(true)
    }

    /// The `init-addr` methods in force for this server.
    pub fn init_addr_methods(&self) -> Vec<InitAddrMethod> {
        effective_init_addr(self.init_addr.as_deref(), self.resolvers.is_some())
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
