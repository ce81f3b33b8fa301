//! The egress policy: every outbound request Evident makes on a source's behalf (the web
//! crawler, GitHub, GitLab, Jira and Confluence clients, git over HTTPS, Ollama) goes
//! through one [`EgressPolicy`].
//!
//! - Only `http` and `https`.
//! - An address is refused when it is loopback, unspecified, private, link-local, CGNAT,
//!   multicast, broadcast, unique-local, documentation/benchmarking/reserved, a cloud metadata
//!   address, or an IPv6 form of a refused IPv4 address (mapped, compatible, NAT64, 6to4);
//!   see [`classify`].
//! - A host name is resolved and refused when *any* of its addresses is refused; the HTTP
//!   client connects to exactly the addresses that were checked ([`PinnedResolver`], installed
//!   by [`EgressPolicy::client_builder`]), so there is no DNS-rebinding window.
//! - An IP literal (reqwest does not call the resolver for those; `url` has already turned
//!   `2130706433`, `0x7f000001` and `0177.0.0.1` into `127.0.0.1`) is checked before the
//!   request ([`EgressPolicy::check_literal`]) and on every redirect.
//! - Every redirect is re-checked (at most [`MAX_REDIRECTS`]).
//! - `[egress] allow` lists what an operator runs on purpose inside the network: host names
//!   (exact, or `*.suffix` for subdomains), IP addresses and CIDR ranges.
//!
//! Must not: know sources, stores or configuration files.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use url::{Host, Url};

/// Redirects followed per request at most.
pub const MAX_REDIRECTS: usize = 10;

/// `[egress]` in the configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EgressConfig {
    /// Host names (`gitlab.internal`, `*.corp.example`), IP addresses and CIDR ranges
    /// (`10.1.2.0/24`) that may be reached although the policy would refuse them.
    #[serde(default)]
    pub allow: Vec<String>,
}

impl EgressConfig {
    pub fn policy(&self) -> Result<EgressPolicy, String> {
        EgressPolicy::new(&self.allow)
    }
}

/// Why a request was not made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EgressError {
    /// A scheme other than http(s).
    #[error("refused: `{url}`: only http and https are allowed (egress policy)")]
    Scheme { url: String },
    #[error("refused: `{url}` names no host (egress policy)")]
    NoHost { url: String },
    /// The address (of an IP literal, or one the host resolved to) is in a refused range.
    #[error("{}", address_message(.host.as_deref(), .addr, .class))]
    Address {
        /// The host name that resolved to `addr` (`None` for an IP literal).
        host: Option<String>,
        addr: IpAddr,
        /// What the address is (`a loopback address`).
        class: &'static str,
    },
    #[error("refused: more than {0} redirects")]
    TooManyRedirects(usize),
    /// Resolution failed (not a refusal: it may succeed later).
    #[error("cannot resolve {host}: {reason}")]
    Resolve { host: String, reason: String },
}

fn address_message(host: Option<&str>, addr: &IpAddr, class: &str) -> String {
    let what = match host {
        Some(h) => format!("{h} resolves to {addr}, {class}"),
        None => format!("{addr} is {class}"),
    };
    format!("refused: {what} (egress policy; allow it in [egress] allow)")
}

impl EgressError {
    /// Whether the policy refused (as opposed to a resolution failure that may pass later).
    pub fn is_refusal(&self) -> bool {
        !matches!(self, EgressError::Resolve { .. })
    }
}

/// What `ip` is when the policy refuses it (`a loopback address`), `None` when it is a
/// public address.
pub fn classify(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], len: u32) -> bool {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, len: u32) -> bool {
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - len)
    };
    u128::from(ip) & mask == u128::from(net) & mask
}

fn classify_v4(ip: Ipv4Addr) -> Option<&'static str> {
    const RANGES: &[([u8; 4], u32, &str)] = &[
        ([169, 254, 169, 254], 32, "the cloud metadata address"),
        ([255, 255, 255, 255], 32, "the broadcast address"),
        ([0, 0, 0, 0], 8, "an unspecified (this-network) address"),
        ([127, 0, 0, 0], 8, "a loopback address"),
        ([10, 0, 0, 0], 8, "a private address"),
        ([172, 16, 0, 0], 12, "a private address"),
        ([192, 168, 0, 0], 16, "a private address"),
        ([100, 64, 0, 0], 10, "a carrier-grade NAT (shared) address"),
        ([169, 254, 0, 0], 16, "a link-local address"),
        ([224, 0, 0, 0], 4, "a multicast address"),
        ([192, 0, 2, 0], 24, "a documentation address"),
        ([198, 51, 100, 0], 24, "a documentation address"),
        ([203, 0, 113, 0], 24, "a documentation address"),
        ([198, 18, 0, 0], 15, "a benchmarking address"),
        (
            [192, 0, 0, 0],
            24,
            "a reserved (protocol assignments) address",
        ),
        ([192, 88, 99, 0], 24, "a reserved (6to4 relay) address"),
        ([240, 0, 0, 0], 4, "a reserved address"),
    ];
    RANGES
        .iter()
        .find(|(net, len, _)| in_v4(ip, *net, *len))
        .map(|(_, _, class)| *class)
}

fn embedded_v4(ip: Ipv6Addr) -> Ipv4Addr {
    let o = ip.octets();
    Ipv4Addr::new(o[12], o[13], o[14], o[15])
}

fn classify_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let net = |s: &str| -> Ipv6Addr { s.parse().unwrap_or(Ipv6Addr::UNSPECIFIED) };
    if ip == net("fd00:ec2::254") {
        return Some("the cloud metadata address");
    }
    if ip.is_unspecified() {
        return Some("an unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    // IPv4-compatible (::a.b.c.d, deprecated): never routed, refused whatever it embeds.
    if in_v6(ip, Ipv6Addr::UNSPECIFIED, 96) {
        return Some(
            classify_v4(embedded_v4(ip)).unwrap_or("a reserved (IPv4-compatible) address"),
        );
    }
    // NAT64 well-known prefix: the IPv4 address it translates to decides.
    if in_v6(ip, net("64:ff9b::"), 96) {
        return classify_v4(embedded_v4(ip));
    }
    // 6to4: the IPv4 address in bits 16..48 decides.
    if in_v6(ip, net("2002::"), 16) {
        let o = ip.octets();
        return classify_v4(Ipv4Addr::new(o[2], o[3], o[4], o[5]));
    }
    const RANGES: &[(&str, u32, &str)] = &[
        ("64:ff9b:1::", 48, "a reserved (local-use NAT64) address"),
        ("100::", 64, "a reserved (discard-only) address"),
        ("2001:db8::", 32, "a documentation address"),
        ("3fff::", 20, "a documentation address"),
        ("2001:2::", 48, "a benchmarking address"),
        (
            "2001::",
            23,
            "a reserved (special-purpose, e.g. Teredo) address",
        ),
        ("fc00::", 7, "a unique-local address"),
        ("fe80::", 10, "a link-local address"),
        ("fec0::", 10, "a site-local address"),
        ("ff00::", 8, "a multicast address"),
    ];
    RANGES
        .iter()
        .find(|(n, len, _)| in_v6(ip, net(n), *len))
        .map(|(_, _, class)| *class)
}

/// An IP range of the allow-list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Net {
    addr: IpAddr,
    len: u32,
}

impl Net {
    fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => in_v4(a, n.octets(), self.len),
            (IpAddr::V6(n), IpAddr::V6(a)) => in_v6(a, n, self.len),
            _ => false,
        }
    }
}

/// What `[egress] allow` lets through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    names: Vec<String>,
    /// `*.corp.example` → `.corp.example`.
    suffixes: Vec<String>,
    nets: Vec<Net>,
}

fn normal_host(h: &str) -> String {
    h.trim_end_matches('.').to_ascii_lowercase()
}

impl AllowList {
    /// Parses entries: `host.name`, `*.suffix`, `10.1.2.3`, `[::1]`, `10.1.2.0/24`, `fd00::/8`.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<AllowList, String> {
        let mut list = AllowList::default();
        for e in entries {
            list.add(e.as_ref())?;
        }
        Ok(list)
    }

    fn add(&mut self, entry: &str) -> Result<(), String> {
        let e = entry.trim();
        let bad = |why: &str| format!("[egress] allow: `{entry}`: {why}");
        if e.is_empty() {
            return Err(bad("empty entry"));
        }
        if let Some((addr, len)) = e.split_once('/') {
            let addr: IpAddr = addr.parse().map_err(|_| bad("not an IP range"))?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let len: u32 = len
                .parse()
                .ok()
                .filter(|l| *l <= max)
                .ok_or_else(|| bad("prefix length out of range"))?;
            self.nets.push(Net { addr, len });
            return Ok(());
        }
        let unbracketed = e.trim_start_matches('[').trim_end_matches(']');
        if let Ok(addr) = unbracketed.parse::<IpAddr>() {
            let len = if addr.is_ipv4() { 32 } else { 128 };
            self.nets.push(Net { addr, len });
            return Ok(());
        }
        let (wild, name) = match e.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, e),
        };
        let ok = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
        if !ok {
            return Err(bad(
                "a host name, `*.suffix`, an IP address or a CIDR range",
            ));
        }
        if wild {
            self.suffixes.push(format!(".{}", normal_host(name)));
        } else {
            self.names.push(normal_host(name));
        }
        Ok(())
    }

    /// Whether the host name is listed (exactly, or under a `*.suffix`).
    pub fn admits_name(&self, host: &str) -> bool {
        let h = normal_host(host);
        self.names.contains(&h) || self.suffixes.iter().any(|s| h.ends_with(s.as_str()))
    }

    /// Whether the address is in a listed range (an IPv4-mapped IPv6 address counts as its
    /// IPv4 address).
    pub fn admits_ip(&self, ip: IpAddr) -> bool {
        let canonical = ip.to_canonical();
        self.nets
            .iter()
            .any(|n| n.contains(ip) || n.contains(canonical))
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.suffixes.is_empty() && self.nets.is_empty()
    }
}

/// The policy: refused ranges, and the operator's allow-list. Cheap to clone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressPolicy {
    allow: Arc<AllowList>,
}

impl EgressPolicy {
    /// The policy with `allow` as its allow-list (`[egress] allow`).
    pub fn new<S: AsRef<str>>(allow: &[S]) -> Result<EgressPolicy, String> {
        Ok(EgressPolicy {
            allow: Arc::new(AllowList::parse(allow)?),
        })
    }

    /// The default policy: nothing internal allowed.
    pub fn strict() -> EgressPolicy {
        EgressPolicy::default()
    }

    /// Tests talking to fake servers on loopback: `127.0.0.0/8`, `::1` and `localhost`.
    pub fn allow_loopback_for_tests() -> EgressPolicy {
        EgressPolicy::new(&["127.0.0.0/8", "::1", "localhost"]).unwrap_or_default()
    }

    /// This policy with one more allow-list entry.
    pub fn allowing(&self, entry: &str) -> Result<EgressPolicy, String> {
        let mut allow = (*self.allow).clone();
        allow.add(entry)?;
        Ok(EgressPolicy {
            allow: Arc::new(allow),
        })
    }

    /// This policy with the host of `url` allowed (an operator-configured endpoint, such as
    /// the Ollama server, is the operator's own choice).
    pub fn allowing_host_of(&self, url: &str) -> Result<EgressPolicy, String> {
        let u = Url::parse(url).map_err(|e| format!("`{url}`: {e}"))?;
        match u.host() {
            Some(Host::Domain(d)) => self.allowing(d),
            Some(Host::Ipv4(a)) => self.allowing(&a.to_string()),
            Some(Host::Ipv6(a)) => self.allowing(&a.to_string()),
            None => Err(format!("`{url}` names no host")),
        }
    }

    pub fn allow_list(&self) -> &AllowList {
        &self.allow
    }

    /// Checks one address (`host`: the name it was resolved from, if any).
    pub fn check_ip(&self, host: Option<&str>, ip: IpAddr) -> Result<(), EgressError> {
        if self.allow.admits_ip(ip) {
            return Ok(());
        }
        match classify(ip) {
            None => Ok(()),
            Some(class) => Err(EgressError::Address {
                host: host.map(str::to_string),
                addr: ip,
                class,
            }),
        }
    }

    /// What can be checked without resolving: the scheme, a host present, and an IP literal
    /// host. A host name passes here; [`PinnedResolver`] (or [`Self::check_url`]) checks it.
    pub fn check_literal(&self, url: &Url) -> Result<(), EgressError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(EgressError::Scheme {
                url: url.to_string(),
            });
        }
        match url.host() {
            None => Err(EgressError::NoHost {
                url: url.to_string(),
            }),
            Some(Host::Ipv4(a)) => self.check_ip(None, IpAddr::V4(a)),
            Some(Host::Ipv6(a)) => self.check_ip(None, IpAddr::V6(a)),
            Some(Host::Domain(_)) => Ok(()),
        }
    }

    /// Resolves `host` and checks every address; an allow-listed name is not checked.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, EgressError> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            self.check_ip(None, ip)?;
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((bare, port))
            .await
            .map_err(|e| EgressError::Resolve {
                host: bare.to_string(),
                reason: e.to_string(),
            })?
            .collect();
        if addrs.is_empty() {
            return Err(EgressError::Resolve {
                host: bare.to_string(),
                reason: "no addresses".into(),
            });
        }
        if !self.allow.admits_name(bare) {
            for a in &addrs {
                self.check_ip(Some(bare), a.ip())?;
            }
        }
        Ok(addrs)
    }

    /// The whole check of a URL: scheme, IP literal, and every address its host resolves to.
    pub async fn check_url(&self, url: &Url) -> Result<(), EgressError> {
        self.check_literal(url)?;
        if let Some(Host::Domain(d)) = url.host() {
            self.resolve(d, url.port_or_known_default().unwrap_or(443))
                .await?;
        }
        Ok(())
    }

    /// [`Self::check_url`] of a URL given as text (an unparsable URL is refused).
    pub async fn check_url_str(&self, url: &str) -> Result<(), EgressError> {
        let u = Url::parse(url).map_err(|_| EgressError::NoHost {
            url: url.to_string(),
        })?;
        self.check_url(&u).await
    }

    /// A redirect policy re-checking every hop (scheme and IP literals here; host names at
    /// connection, by the resolver), at most [`MAX_REDIRECTS`].
    pub fn redirect_policy(&self) -> reqwest::redirect::Policy {
        let policy = self.clone();
        reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                return attempt.error(EgressError::TooManyRedirects(MAX_REDIRECTS));
            }
            match policy.check_literal(attempt.url()) {
                Ok(()) => attempt.follow(),
                Err(e) => attempt.error(e),
            }
        })
    }

    /// The resolver that checks and pins addresses.
    pub fn resolver(&self) -> Arc<PinnedResolver> {
        Arc::new(PinnedResolver {
            policy: self.clone(),
        })
    }

    /// A client builder with the policy installed: the checking resolver, the re-checking
    /// redirect policy, and no proxy (a proxy would connect wherever it is told, past the
    /// address check). Callers still run [`Self::check_literal`] on the URLs they request
    /// (reqwest does not resolve IP literals); [`EgressClient`] does that for them.
    pub fn client_builder(&self) -> reqwest::ClientBuilder {
        reqwest::Client::builder()
            .dns_resolver(self.resolver())
            .redirect(self.redirect_policy())
            .no_proxy()
    }
}

/// A `reqwest` resolver that resolves, checks every address, and hands reqwest exactly the
/// addresses it checked.
#[derive(Debug, Clone)]
pub struct PinnedResolver {
    policy: EgressPolicy,
}

impl reqwest::dns::Resolve for PinnedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs = policy.resolve(&host, 0).await?;
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// The policy's refusal behind an error (a `reqwest::Error` from the resolver or the
/// redirect policy carries it as a source).
pub fn refusal_in<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a EgressError> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(found) = e.downcast_ref::<EgressError>() {
            return Some(found);
        }
        cur = e.source();
    }
    None
}

/// A request error said plainly: the policy's refusal when that is what stopped it, else the
/// error and its causes.
pub fn describe(err: &reqwest::Error) -> String {
    if let Some(r) = refusal_in(err) {
        return r.to_string();
    }
    let mut out = err.to_string();
    let mut cur = std::error::Error::source(err);
    while let Some(e) = cur {
        let s = e.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cur = e.source();
    }
    out
}

/// A `reqwest::Client` built under a policy, checking each URL's literal host before sending.
#[derive(Debug, Clone)]
pub struct EgressClient {
    pub http: reqwest::Client,
    pub policy: EgressPolicy,
}

impl EgressClient {
    /// A GET of `url` once its scheme and IP literal pass (its host name is checked at
    /// connection).
    pub fn get(&self, url: Url) -> Result<reqwest::RequestBuilder, EgressError> {
        self.policy.check_literal(&url)?;
        Ok(self.http.get(url))
    }
}

impl fmt::Display for AllowList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = self.names.clone();
        parts.extend(self.suffixes.iter().map(|s| format!("*{s}")));
        parts.extend(self.nets.iter().map(|n| format!("{}/{}", n.addr, n.len)));
        write!(f, "[{}]", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn refused_ranges() {
        for (a, class) in [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("0.0.0.0", "unspecified"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.1.1", "link-local"),
            ("169.254.169.254", "metadata"),
            ("100.64.0.1", "carrier-grade"),
            ("100.127.255.255", "carrier-grade"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("192.0.2.1", "documentation"),
            ("198.51.100.7", "documentation"),
            ("203.0.113.7", "documentation"),
            ("198.18.0.1", "benchmarking"),
            ("240.0.0.1", "reserved"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fe80::1", "link-local"),
            ("fc00::1", "unique-local"),
            ("fd12:3456::1", "unique-local"),
            ("fd00:ec2::254", "metadata"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "documentation"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "metadata"),
            ("::ffff:10.0.0.1", "private"),
            ("::127.0.0.1", "loopback"),
            ("::8.8.8.8", "IPv4-compatible"),
            ("64:ff9b::7f00:1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "metadata"),
            ("2002:7f00:1::", "loopback"),
            ("2001::1", "Teredo"),
        ] {
            let got = classify(ip(a)).unwrap_or_else(|| panic!("{a} must be refused"));
            assert!(got.contains(class), "{a}: {got}");
        }
        for a in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert_eq!(classify(ip(a)), None, "{a} is public");
        }
    }

    #[test]
    fn url_parsing_normalises_numeric_hosts() {
        let p = EgressPolicy::strict();
        for u in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://[::1]:8080/",
            "http://[::ffff:7f00:1]/",
            "http://169.254.169.254/latest/meta-data/",
            "http://0/",
            "http://127.0.0.1./",
            "http://0x7f.1/",
            "http://[0:0:0:0:0:ffff:7f00:1]/",
            "http://\u{ff11}\u{ff12}\u{ff17}.0.0.1/",
            "https://[fe80::1]/",
            "http://[64:ff9b::a9fe:a9fe]/",
        ] {
            let url = Url::parse(u).expect("url");
            let e = p.check_literal(&url).expect_err(u);
            assert!(e.is_refusal());
            assert!(e.to_string().contains("[egress] allow"), "{u}: {e}");
        }
        let e = p
            .check_literal(&Url::parse("http://2130706433/").expect("url"))
            .expect_err("refused");
        assert_eq!(
            e.to_string(),
            "refused: 127.0.0.1 is a loopback address (egress policy; allow it in [egress] allow)"
        );
        for u in ["ftp://example.com/", "file:///etc/passwd", "gopher://x/"] {
            let url = Url::parse(u).expect("url");
            assert!(
                matches!(p.check_literal(&url), Err(EgressError::Scheme { .. })),
                "{u}"
            );
        }
        assert!(
            p.check_literal(&Url::parse("https://example.com/").expect("url"))
                .is_ok()
        );
    }

    #[test]
    fn allow_list_entries() {
        let p = EgressPolicy::new(&[
            "gitlab.internal",
            "*.corp.example",
            "10.1.2.0/24",
            "127.0.0.1",
            "[fd00::5]",
        ])
        .expect("policy");
        assert!(p.check_ip(None, ip("10.1.2.77")).is_ok());
        assert!(p.check_ip(None, ip("10.1.3.1")).is_err());
        assert!(p.check_ip(None, ip("127.0.0.1")).is_ok());
        assert!(p.check_ip(None, ip("::ffff:127.0.0.1")).is_ok());
        assert!(p.check_ip(None, ip("127.0.0.2")).is_err());
        assert!(p.check_ip(None, ip("fd00::5")).is_ok());
        let a = p.allow_list();
        assert!(a.admits_name("gitlab.internal"));
        assert!(a.admits_name("GitLab.Internal."));
        assert!(!a.admits_name("evil-gitlab.internal"));
        assert!(a.admits_name("jira.corp.example"));
        assert!(!a.admits_name("corp.example"));
        assert!(!a.admits_name("xcorp.example"));
        for bad in ["", "10.0.0.0/33", "x/y", "a b", "http://x"] {
            assert!(EgressPolicy::new(&[bad]).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn names_resolving_to_refused_addresses_are_refused() {
        let strict = EgressPolicy::strict();
        let e = strict
            .check_url(&Url::parse("http://localhost:9/").expect("url"))
            .await
            .expect_err("localhost is loopback");
        assert!(e.is_refusal());
        assert!(
            e.to_string().starts_with("refused: localhost resolves to "),
            "{e}"
        );
        let by_name = EgressPolicy::new(&["localhost"]).expect("policy");
        assert!(
            by_name
                .check_url(&Url::parse("http://localhost:9/").expect("url"))
                .await
                .is_ok()
        );
        let by_ip = EgressPolicy::allow_loopback_for_tests();
        assert!(by_ip.resolve("127.0.0.1", 80).await.is_ok());
        assert!(strict.resolve("[::1]", 80).await.is_err());
    }
}
