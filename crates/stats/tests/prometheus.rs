//! Prometheus exposition: strict format check, a third-party parser, and
//! names/types/labels against HAProxy 2.6's exporter.

mod common;

use fairlead_stats::*;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Every family HAProxy 2.6.12's exporter printed (`# TYPE` lines) for
/// a configuration like the fixture's.
const HAPROXY_26_NAMES: &[&str] = &[
    "haproxy_process_nbthread",
    "haproxy_process_nbproc",
    "haproxy_process_relative_process_id",
    "haproxy_process_uptime_seconds",
    "haproxy_process_pool_failures_total",
    "haproxy_process_max_fds",
    "haproxy_process_max_sockets",
    "haproxy_process_max_connections",
    "haproxy_process_hard_max_connections",
    "haproxy_process_current_connections",
    "haproxy_process_connections_total",
    "haproxy_process_requests_total",
    "haproxy_process_max_ssl_connections",
    "haproxy_process_current_ssl_connections",
    "haproxy_process_ssl_connections_total",
    "haproxy_process_max_pipes",
    "haproxy_process_pipes_used_total",
    "haproxy_process_pipes_free_total",
    "haproxy_process_current_connection_rate",
    "haproxy_process_limit_connection_rate",
    "haproxy_process_max_connection_rate",
    "haproxy_process_current_session_rate",
    "haproxy_process_limit_session_rate",
    "haproxy_process_max_session_rate",
    "haproxy_process_current_ssl_rate",
    "haproxy_process_limit_ssl_rate",
    "haproxy_process_max_ssl_rate",
    "haproxy_process_current_frontend_ssl_key_rate",
    "haproxy_process_max_frontend_ssl_key_rate",
    "haproxy_process_frontend_ssl_reuse",
    "haproxy_process_current_backend_ssl_key_rate",
    "haproxy_process_max_backend_ssl_key_rate",
    "haproxy_process_ssl_cache_lookups_total",
    "haproxy_process_ssl_cache_misses_total",
    "haproxy_process_http_comp_bytes_in_total",
    "haproxy_process_http_comp_bytes_out_total",
    "haproxy_process_limit_http_comp",
    "haproxy_process_current_zlib_memory",
    "haproxy_process_max_zlib_memory",
    "haproxy_process_current_tasks",
    "haproxy_process_current_run_queue",
    "haproxy_process_idle_time_percent",
    "haproxy_process_stopping",
    "haproxy_process_jobs",
    "haproxy_process_unstoppable_jobs",
    "haproxy_process_listeners",
    "haproxy_process_active_peers",
    "haproxy_process_connected_peers",
    "haproxy_process_dropped_logs_total",
    "haproxy_process_busy_polling_enabled",
    "haproxy_process_failed_resolutions",
    "haproxy_process_bytes_out_total",
    "haproxy_process_spliced_bytes_out_total",
    "haproxy_process_bytes_out_rate",
    "haproxy_process_recv_logs_total",
    "haproxy_process_build_info",
    "haproxy_process_max_memory_bytes",
    "haproxy_process_pool_allocated_bytes",
    "haproxy_process_pool_used_bytes",
    "haproxy_process_start_time_seconds",
    "haproxy_frontend_current_sessions",
    "haproxy_frontend_max_sessions",
    "haproxy_frontend_limit_sessions",
    "haproxy_frontend_sessions_total",
    "haproxy_frontend_bytes_in_total",
    "haproxy_frontend_bytes_out_total",
    "haproxy_frontend_requests_denied_total",
    "haproxy_frontend_responses_denied_total",
    "haproxy_frontend_request_errors_total",
    "haproxy_frontend_status",
    "haproxy_frontend_limit_session_rate",
    "haproxy_frontend_max_session_rate",
    "haproxy_frontend_http_responses_total",
    "haproxy_frontend_http_requests_rate_max",
    "haproxy_frontend_http_requests_total",
    "haproxy_frontend_http_comp_bytes_in_total",
    "haproxy_frontend_http_comp_bytes_out_total",
    "haproxy_frontend_http_comp_bytes_bypassed_total",
    "haproxy_frontend_http_comp_responses_total",
    "haproxy_frontend_connections_rate_max",
    "haproxy_frontend_connections_total",
    "haproxy_frontend_intercepted_requests_total",
    "haproxy_frontend_denied_connections_total",
    "haproxy_frontend_denied_sessions_total",
    "haproxy_frontend_failed_header_rewriting_total",
    "haproxy_frontend_http_cache_lookups_total",
    "haproxy_frontend_http_cache_hits_total",
    "haproxy_frontend_internal_errors_total",
    "haproxy_backend_current_queue",
    "haproxy_backend_max_queue",
    "haproxy_backend_current_sessions",
    "haproxy_backend_max_sessions",
    "haproxy_backend_limit_sessions",
    "haproxy_backend_sessions_total",
    "haproxy_backend_bytes_in_total",
    "haproxy_backend_bytes_out_total",
    "haproxy_backend_requests_denied_total",
    "haproxy_backend_responses_denied_total",
    "haproxy_backend_connection_errors_total",
    "haproxy_backend_response_errors_total",
    "haproxy_backend_retry_warnings_total",
    "haproxy_backend_redispatch_warnings_total",
    "haproxy_backend_status",
    "haproxy_backend_weight",
    "haproxy_backend_active_servers",
    "haproxy_backend_backup_servers",
    "haproxy_backend_check_up_down_total",
    "haproxy_backend_check_last_change_seconds",
    "haproxy_backend_downtime_seconds_total",
    "haproxy_backend_loadbalanced_total",
    "haproxy_backend_max_session_rate",
    "haproxy_backend_http_responses_total",
    "haproxy_backend_http_requests_total",
    "haproxy_backend_client_aborts_total",
    "haproxy_backend_server_aborts_total",
    "haproxy_backend_http_comp_bytes_in_total",
    "haproxy_backend_http_comp_bytes_out_total",
    "haproxy_backend_http_comp_bytes_bypassed_total",
    "haproxy_backend_http_comp_responses_total",
    "haproxy_backend_last_session_seconds",
    "haproxy_backend_queue_time_average_seconds",
    "haproxy_backend_connect_time_average_seconds",
    "haproxy_backend_response_time_average_seconds",
    "haproxy_backend_total_time_average_seconds",
    "haproxy_backend_failed_header_rewriting_total",
    "haproxy_backend_connection_attempts_total",
    "haproxy_backend_connection_reuses_total",
    "haproxy_backend_http_cache_lookups_total",
    "haproxy_backend_http_cache_hits_total",
    "haproxy_backend_max_queue_time_seconds",
    "haproxy_backend_max_connect_time_seconds",
    "haproxy_backend_max_response_time_seconds",
    "haproxy_backend_max_total_time_seconds",
    "haproxy_backend_internal_errors_total",
    "haproxy_backend_uweight",
    "haproxy_backend_agg_server_status",
    "haproxy_backend_agg_server_check_status",
    "haproxy_backend_agg_check_status",
    "haproxy_server_current_queue",
    "haproxy_server_max_queue",
    "haproxy_server_current_sessions",
    "haproxy_server_max_sessions",
    "haproxy_server_limit_sessions",
    "haproxy_server_sessions_total",
    "haproxy_server_bytes_in_total",
    "haproxy_server_bytes_out_total",
    "haproxy_server_responses_denied_total",
    "haproxy_server_connection_errors_total",
    "haproxy_server_response_errors_total",
    "haproxy_server_retry_warnings_total",
    "haproxy_server_redispatch_warnings_total",
    "haproxy_server_status",
    "haproxy_server_weight",
    "haproxy_server_check_failures_total",
    "haproxy_server_check_up_down_total",
    "haproxy_server_check_last_change_seconds",
    "haproxy_server_downtime_seconds_total",
    "haproxy_server_queue_limit",
    "haproxy_server_current_throttle",
    "haproxy_server_loadbalanced_total",
    "haproxy_server_max_session_rate",
    "haproxy_server_check_status",
    "haproxy_server_check_code",
    "haproxy_server_check_duration_seconds",
    "haproxy_server_http_responses_total",
    "haproxy_server_client_aborts_total",
    "haproxy_server_server_aborts_total",
    "haproxy_server_last_session_seconds",
    "haproxy_server_queue_time_average_seconds",
    "haproxy_server_connect_time_average_seconds",
    "haproxy_server_response_time_average_seconds",
    "haproxy_server_total_time_average_seconds",
    "haproxy_server_failed_header_rewriting_total",
    "haproxy_server_connection_attempts_total",
    "haproxy_server_connection_reuses_total",
    "haproxy_server_idle_connections_current",
    "haproxy_server_idle_connections_limit",
    "haproxy_server_max_queue_time_seconds",
    "haproxy_server_max_connect_time_seconds",
    "haproxy_server_max_response_time_seconds",
    "haproxy_server_max_total_time_seconds",
    "haproxy_server_internal_errors_total",
    "haproxy_server_unsafe_idle_connections_current",
    "haproxy_server_safe_idle_connections_current",
    "haproxy_server_used_connections_current",
    "haproxy_server_need_connections_current",
    "haproxy_server_uweight",
    // The fixture's stick table (checked against HAProxy 2.6.12 with a
    // `stick-table type ip size 1k` frontend).
    "haproxy_sticktable_size",
    "haproxy_sticktable_used",
];

type Labels = Vec<(String, String)>;
/// Family name -> (type, samples (name, labels, value)).
type Families = BTreeMap<String, (String, Vec<(String, Labels, f64)>)>;

fn exposition() -> String {
    let mut s = common::fixture();
    let h = LatencyHistogram::new();
    for us in [300, 800, 1_500, 40_000, 2_000_000, 70_000_000] {
        h.record(us);
    }
    let app = &mut s.proxies[1];
    app.counters.latency.response = Some(h.snapshot());
    app.counters.latency.total = Some(h.snapshot());
    app.servers[0].counters.latency.response = Some(h.snapshot());
    s.proxies[0].counters.latency.total = Some(h.snapshot());
    let mut out = Vec::new();
    prometheus(&s, &mut out);
    String::from_utf8(out).unwrap()
}

fn valid_metric_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_' || ch == ':')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':')
}

fn valid_label_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

/// Parses `name{a="x",b="y"} value` strictly.
fn parse_sample(line: &str) -> (String, Labels, f64) {
    let (series, value) = line.rsplit_once(' ').expect("sample has a value");
    let v = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        v => v
            .parse::<f64>()
            .unwrap_or_else(|_| panic!("bad value in {line}")),
    };
    let (name, labels) = match series.find('{') {
        None => (series, ""),
        Some(i) => {
            assert!(series.ends_with('}'), "{line}");
            (&series[..i], &series[i + 1..series.len() - 1])
        }
    };
    assert!(valid_metric_name(name), "{line}");
    let mut out = Vec::new();
    let b = labels.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let eq = labels[i..].find('=').expect("label =") + i;
        let k = &labels[i..eq];
        assert!(valid_label_name(k), "label name {k} in {line}");
        assert_eq!(b[eq + 1], b'"', "{line}");
        let mut j = eq + 2;
        let mut val = String::new();
        loop {
            match b[j] {
                b'\\' => {
                    val.push(match b[j + 1] {
                        b'\\' => '\\',
                        b'"' => '"',
                        b'n' => '\n',
                        c => panic!("bad escape {c} in {line}"),
                    });
                    j += 2;
                }
                b'"' => break,
                b'\n' => panic!("raw newline"),
                _ => {
                    let ch = labels[j..].chars().next().unwrap();
                    val.push(ch);
                    j += ch.len_utf8();
                }
            }
        }
        out.push((k.to_string(), val));
        i = j + 1;
        if i < b.len() {
            assert_eq!(b[i], b',', "{line}");
            i += 1;
        }
    }
    (name.to_string(), out, v)
}

/// Checks the whole exposition line by line and returns, per family, its
/// type and samples.
#[allow(clippy::type_complexity)]
fn strict_parse(
    text: &str,
) -> BTreeMap<String, (String, Vec<(String, Vec<(String, String)>, f64)>)> {
    let mut fams: BTreeMap<String, (String, Vec<_>)> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut help_seen = HashSet::new();
    let mut current: Option<String> = None;
    let mut series_seen = HashSet::new();
    assert!(text.ends_with('\n'));
    for line in text.lines() {
        assert!(!line.is_empty(), "empty line");
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect("help text");
            assert!(valid_metric_name(name) && !help.is_empty());
            assert!(help_seen.insert(name.to_string()), "HELP twice for {name}");
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, ty) = rest.split_once(' ').unwrap();
            assert!(["gauge", "counter", "histogram"].contains(&ty), "{line}");
            assert!(help_seen.contains(name), "TYPE before HELP for {name}");
            assert!(!fams.contains_key(name), "TYPE twice for {name}");
            fams.insert(name.to_string(), (ty.to_string(), Vec::new()));
            order.push(name.to_string());
            current = Some(name.to_string());
            continue;
        }
        assert!(!line.starts_with('#'), "{line}");
        let (name, labels, v) = parse_sample(line);
        let fam = current.clone().expect("sample before any TYPE");
        let (ty, samples) = fams.get_mut(&fam).unwrap();
        if ty == "histogram" {
            let suffix = name
                .strip_prefix(fam.as_str())
                .expect("histogram sample name");
            assert!(["_bucket", "_sum", "_count"].contains(&suffix), "{line}");
        } else {
            assert_eq!(name, fam, "samples of one family must be grouped");
        }
        if ty == "counter" {
            assert!(v >= 0.0, "{line}");
        }
        let mut key: Vec<_> = labels.clone();
        key.sort();
        assert!(
            series_seen.insert((name.clone(), key)),
            "duplicate series {line}"
        );
        samples.push((name, labels, v));
    }
    for (name, (_, samples)) in &fams {
        assert!(!samples.is_empty(), "family {name} without samples");
    }
    fams
}

#[test]
fn exposition_is_strictly_valid() {
    let text = exposition();
    let fams = strict_parse(&text);
    assert!(fams.len() > 100, "{}", fams.len());
}

#[test]
fn names_and_types_follow_haproxy() {
    let text = exposition();
    let fams = strict_parse(&text);
    let hap: HashSet<&str> = HAPROXY_26_NAMES.iter().copied().collect();
    for (name, (ty, _)) in &fams {
        if ty == "histogram" {
            assert!(name.ends_with("_time_seconds"), "{name}");
            continue;
        }
        // Fairlead's own metrics have their own prefix.
        if name.starts_with("fairlead_") {
            continue;
        }
        assert!(
            hap.contains(name.as_str()),
            "{name} is not an HAProxy 2.6 exporter name"
        );
        let want = if name.ends_with("_total") {
            "counter"
        } else {
            "gauge"
        };
        // HAProxy's few exceptions to the _total convention.
        if name != "haproxy_process_failed_resolutions" {
            assert_eq!(ty, want, "{name}");
        }
    }
    for must in [
        "haproxy_process_nbthread",
        "haproxy_process_current_connections",
        "haproxy_process_start_time_seconds",
        "haproxy_process_max_connections",
        "haproxy_process_build_info",
        "haproxy_frontend_current_sessions",
        "haproxy_frontend_sessions_total",
        "haproxy_frontend_bytes_in_total",
        "haproxy_frontend_bytes_out_total",
        "haproxy_frontend_http_responses_total",
        "haproxy_frontend_http_requests_total",
        "haproxy_frontend_request_errors_total",
        "haproxy_frontend_status",
        "haproxy_backend_status",
        "haproxy_backend_active_servers",
        "haproxy_backend_response_time_average_seconds",
        "haproxy_server_status",
        "haproxy_server_weight",
        "haproxy_server_check_status",
        "haproxy_server_current_throttle",
    ] {
        assert!(fams.contains_key(must), "missing {must}");
    }
    // Labels: proxy on frontends/backends, proxy+server on servers,
    // name+type on stick tables, plus state / code / le where applicable.
    for (name, (_, samples)) in &fams {
        for (_, labels, _) in samples {
            let keys: Vec<&str> = labels.iter().map(|(k, _)| k.as_str()).collect();
            let base: &[&str] =
                if name.starts_with("haproxy_process_") || name.starts_with("fairlead_process_") {
                    &[]
                } else if name.starts_with("haproxy_server_") {
                    &["proxy", "server"]
                } else if name.starts_with("haproxy_sticktable_") {
                    &["name", "type"]
                } else {
                    &["proxy"]
                };
            assert_eq!(&keys[..base.len()], base, "{name} {labels:?}");
            let extra = &keys[base.len()..];
            assert!(extra.len() <= 1, "{name} {labels:?}");
            if let Some(e) = extra.first() {
                let ok = match *e {
                    "state" => name.ends_with("status"),
                    "code" => name.ends_with("http_responses_total"),
                    "le" => name.ends_with("_time_seconds"),
                    "version" => name == "haproxy_process_build_info",
                    _ => false,
                };
                assert!(ok, "{name} {labels:?}");
            }
        }
    }
}

fn value(fams: &Families, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let fam = name
        .strip_suffix("_bucket")
        .or_else(|| name.strip_suffix("_sum"))
        .or_else(|| name.strip_suffix("_count"))
        .filter(|f| fams.contains_key(*f))
        .unwrap_or(name);
    fams.get(fam)?.1.iter().find_map(|(n, l, v)| {
        let same = n == name
            && l.len() == labels.len()
            && l.iter()
                .zip(labels)
                .all(|((a, b), (c, d))| a == c && b == d);
        same.then_some(*v)
    })
}

#[test]
fn values_and_state_labels() {
    let fams = strict_parse(&exposition());
    let v = |n, l: &[(&str, &str)]| value(&fams, n, l);
    assert_eq!(v("haproxy_process_nbthread", &[]), Some(2.0));
    assert_eq!(
        v("haproxy_process_start_time_seconds", &[]),
        Some(1_795_316_383.0)
    );
    assert_eq!(
        v("haproxy_frontend_sessions_total", &[("proxy", "www")]),
        Some(4.0)
    );
    assert_eq!(
        v(
            "haproxy_frontend_http_responses_total",
            &[("proxy", "www"), ("code", "2xx")]
        ),
        Some(4.0)
    );
    assert_eq!(
        v(
            "haproxy_frontend_http_responses_total",
            &[("proxy", "www"), ("code", "other")]
        ),
        Some(0.0)
    );
    assert_eq!(
        v(
            "haproxy_frontend_status",
            &[("proxy", "www"), ("state", "UP")]
        ),
        Some(1.0)
    );
    assert_eq!(
        v(
            "haproxy_frontend_status",
            &[("proxy", "www"), ("state", "DOWN")]
        ),
        Some(0.0)
    );
    // TCP backends have no HTTP families.
    assert_eq!(
        v("haproxy_backend_http_requests_total", &[("proxy", "tcpb")]),
        None
    );
    assert_eq!(
        v("haproxy_backend_http_requests_total", &[("proxy", "app")]),
        Some(4.0)
    );
    for (srv, state) in [("a1", "UP"), ("a2", "DOWN"), ("a3", "MAINT"), ("a5", "UP")] {
        for s in ["DOWN", "UP", "MAINT", "DRAIN", "NOLB"] {
            let want = if s == state { 1.0 } else { 0.0 };
            assert_eq!(
                v(
                    "haproxy_server_status",
                    &[("proxy", "app"), ("server", srv), ("state", s)]
                ),
                Some(want),
                "{srv} {s}"
            );
        }
    }
    assert_eq!(
        v(
            "haproxy_backend_agg_server_status",
            &[("proxy", "app"), ("state", "UP")]
        ),
        Some(3.0)
    );
    assert_eq!(
        v(
            "haproxy_server_check_status",
            &[("proxy", "app"), ("server", "a2"), ("state", "L7STS")]
        ),
        Some(1.0)
    );
    assert_eq!(
        v(
            "haproxy_server_check_status",
            &[("proxy", "app"), ("server", "a3"), ("state", "L7STS")]
        ),
        None
    );
    assert_eq!(
        v(
            "haproxy_server_check_code",
            &[("proxy", "app"), ("server", "a2")]
        ),
        Some(503.0)
    );
    assert_eq!(
        v(
            "haproxy_server_current_throttle",
            &[("proxy", "app"), ("server", "a1")]
        ),
        Some(6.0)
    );
    assert_eq!(
        v(
            "haproxy_server_queue_limit",
            &[("proxy", "app"), ("server", "a1")]
        ),
        Some(10.0)
    );
    assert_eq!(
        v(
            "haproxy_server_weight",
            &[("proxy", "app"), ("server", "a1")]
        ),
        Some(1.0)
    );
    assert_eq!(
        v(
            "haproxy_server_last_session_seconds",
            &[("proxy", "app"), ("server", "a1")]
        ),
        Some(-1.0)
    );
    assert_eq!(
        v(
            "haproxy_server_max_total_time_seconds",
            &[("proxy", "app"), ("server", "a5")]
        ),
        Some(0.005)
    );
}

#[test]
fn histograms_are_cumulative() {
    let fams = strict_parse(&exposition());
    let mut seen = 0;
    for (name, (ty, samples)) in &fams {
        if ty != "histogram" {
            continue;
        }
        // Group buckets by the labels other than le.
        let mut by_series: HashMap<Labels, Vec<(f64, f64)>> = HashMap::new();
        let mut counts = HashMap::new();
        let mut sums = HashMap::new();
        for (n, labels, v) in samples {
            let base: Vec<_> = labels.iter().filter(|(k, _)| k != "le").cloned().collect();
            if n.ends_with("_bucket") {
                let le = &labels.last().unwrap();
                assert_eq!(le.0, "le");
                let bound = if le.1 == "+Inf" {
                    f64::INFINITY
                } else {
                    le.1.parse().unwrap()
                };
                by_series.entry(base).or_default().push((bound, *v));
            } else if n.ends_with("_count") {
                counts.insert(base, *v);
            } else {
                sums.insert(base, *v);
            }
        }
        for (series, buckets) in &by_series {
            seen += 1;
            assert_eq!(buckets.len(), BUCKETS, "{name}");
            assert!(
                buckets
                    .windows(2)
                    .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
                "{name} {buckets:?}"
            );
            assert_eq!(buckets.last().unwrap().0, f64::INFINITY);
            assert_eq!(buckets.last().unwrap().1, counts[series]);
            assert_eq!(counts[series], 6.0);
            assert!((sums[series] - 72.0426).abs() < 1e-9, "{}", sums[series]);
            assert_eq!(buckets[0], (0.0005, 1.0));
            assert_eq!(buckets[1], (0.001, 2.0));
            assert_eq!(buckets[BUCKETS - 2], (60.0, 5.0));
        }
    }
    // backend response+total, server response, frontend total.
    assert_eq!(seen, 4);
    assert!(fams.contains_key("haproxy_backend_response_time_seconds"));
    assert!(fams.contains_key("haproxy_backend_total_time_seconds"));
    assert!(fams.contains_key("haproxy_server_response_time_seconds"));
    assert!(fams.contains_key("haproxy_frontend_total_time_seconds"));
}

#[test]
fn third_party_parser_agrees() {
    use prometheus_parse::{Scrape, Value};
    let text = exposition();
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let find = |metric: &str, labels: &[(&str, &str)]| {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
    };
    let s = find(
        "haproxy_frontend_http_responses_total",
        &[("proxy", "www"), ("code", "2xx")],
    )
    .unwrap();
    assert_eq!(s.value, Value::Counter(4.0));
    let s = find(
        "haproxy_server_status",
        &[("proxy", "app"), ("server", "a3"), ("state", "MAINT")],
    )
    .unwrap();
    assert_eq!(s.value, Value::Gauge(1.0));
    let s = find("haproxy_backend_response_time_seconds", &[("proxy", "app")]).unwrap();
    match &s.value {
        Value::Histogram(b) => {
            assert_eq!(b.len(), BUCKETS);
            assert!(b.windows(2).all(|w| w[0].count <= w[1].count));
            assert_eq!(b.last().unwrap().count, 6.0);
        }
        v => panic!("{v:?}"),
    }
    assert!(scrape.docs.contains_key("haproxy_process_nbthread"));
    // Every sample line outside histogram buckets was understood.
    let lines = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.contains("_time_seconds_bucket"))
        .count();
    let plain = scrape
        .samples
        .iter()
        .filter(|s| !matches!(s.value, Value::Histogram(_)))
        .count();
    assert_eq!(plain, lines);
}

#[test]
fn label_values_are_escaped() {
    let mut s = common::fixture();
    s.proxies[0].name = "we\"ird\\px\nname".into();
    let mut out = Vec::new();
    prometheus(&s, &mut out);
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(r#"haproxy_frontend_current_sessions{proxy="we\"ird\\px\nname"} 0"#));
    let fams = strict_parse(&text);
    let (_, samples) = &fams["haproxy_frontend_current_sessions"];
    assert!(samples
        .iter()
        .any(|(_, l, _)| l[0].1 == "we\"ird\\px\nname"));
}

#[test]
fn empty_snapshot_has_only_process_metrics() {
    let mut out = Vec::new();
    prometheus(&Snapshot::default(), &mut out);
    let text = String::from_utf8(out).unwrap();
    let fams = strict_parse(&text);
    assert!(fams
        .keys()
        .all(|k| k.starts_with("haproxy_process_") || k.starts_with("fairlead_process_")));
}

/// Stick tables as HAProxy 2.6's exporter shows them (lines checked
/// against HAProxy 2.6.12): one gauge family each for the size and the
/// entries in use, labelled by name and type.
#[test]
fn sticktable_size_and_used() {
    let mut s = common::fixture();
    s.tables.push(TableStats {
        name: "empty".into(),
        key_type: "string".into(),
        size: 0,
        used: 0,
    });
    let mut out = Vec::new();
    prometheus(&s, &mut out);
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains(
            "# HELP haproxy_sticktable_size Stick table size.\n# TYPE haproxy_sticktable_size gauge\nhaproxy_sticktable_size{name=\"www\",type=\"ip\"} 1024\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "# HELP haproxy_sticktable_used Number of entries used in this stick table.\n# TYPE haproxy_sticktable_used gauge\nhaproxy_sticktable_used{name=\"www\",type=\"ip\"} 3\n"
        ),
        "{text}"
    );
    // A table of size 0 is left out, as HAProxy does.
    assert!(!text.contains("name=\"empty\""), "{text}");
}
