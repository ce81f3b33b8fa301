//! robots.txt (RFC 9309): which paths a crawler may fetch.
//!
//! The group for a crawler is the one whose `User-agent` names its product token
//! (case-insensitive), else the `*` group; groups naming the same agent merge. Within it the
//! longest matching rule wins, `Allow` on a tie; `*` matches any run of characters and a final
//! `$` anchors the end. No group, no rules: everything is allowed. `Crawl-delay` (not in the
//! RFC, widely used) is read for the chosen group.

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Robots {
    rules: Vec<(bool, String)>,
    pub crawl_delay_secs: Option<f64>,
}

#[derive(Default)]
struct Group {
    agents: Vec<String>,
    rules: Vec<(bool, String)>,
    delay: Option<f64>,
}

impl Robots {
    /// Everything allowed (no robots.txt, or one that could not be fetched with a 4xx).
    pub fn allow_all() -> Robots {
        Robots::default()
    }

    /// Nothing allowed (the server failed to answer for robots.txt: RFC 9309 §2.3.1.4).
    pub fn disallow_all() -> Robots {
        Robots {
            rules: vec![(false, "/".into())],
            crawl_delay_secs: None,
        }
    }

    /// The rules of `text` for the crawler whose product token is `agent` (`EvidentBot`).
    pub fn parse(text: &str, agent: &str) -> Robots {
        let agent = agent.to_ascii_lowercase();
        let mut groups: Vec<Group> = Vec::new();
        let mut open_agents = false;
        for raw in text.lines() {
            let line = raw.split('#').next().unwrap_or("").trim();
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let (key, value) = (key.trim().to_ascii_lowercase(), value.trim());
            match key.as_str() {
                "user-agent" => {
                    if !open_agents {
                        groups.push(Group::default());
                        open_agents = true;
                    }
                    if let Some(g) = groups.last_mut() {
                        g.agents.push(value.to_ascii_lowercase());
                    }
                }
                "allow" | "disallow" => {
                    open_agents = false;
                    // An empty Disallow allows everything: no rule.
                    if let (Some(g), false) = (groups.last_mut(), value.is_empty()) {
                        g.rules.push((key == "allow", value.to_string()));
                    }
                }
                "crawl-delay" => {
                    open_agents = false;
                    if let Some(g) = groups.last_mut() {
                        g.delay = value
                            .parse()
                            .ok()
                            .filter(|d: &f64| d.is_finite() && *d >= 0.0);
                    }
                }
                _ => {}
            }
        }
        let named: Vec<&Group> = groups
            .iter()
            .filter(|g| {
                g.agents
                    .iter()
                    .any(|a| a != "*" && agent.contains(a.as_str()))
            })
            .collect();
        let chosen = if named.is_empty() {
            groups
                .iter()
                .filter(|g| g.agents.iter().any(|a| a == "*"))
                .collect()
        } else {
            named
        };
        Robots {
            rules: chosen.iter().flat_map(|g| g.rules.clone()).collect(),
            crawl_delay_secs: chosen.iter().find_map(|g| g.delay),
        }
    }

    /// Whether `path` (path and query, e.g. `/a/b?x=1`) may be fetched.
    pub fn allowed(&self, path: &str) -> bool {
        let mut best: Option<(usize, bool)> = None;
        for (allow, pattern) in &self.rules {
            if matches(pattern, path) {
                let len = pattern.len();
                best = match best {
                    Some((l, a)) if l > len || (l == len && a) => Some((l, a)),
                    _ => Some((len, *allow)),
                };
            }
        }
        best.is_none_or(|(_, allow)| allow)
    }
}

/// Whether a robots pattern matches a path from its start.
fn matches(pattern: &str, path: &str) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix('$') {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    let parts: Vec<&str> = pattern.split('*').collect();
    let mut at = 0;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            if !path.starts_with(part) {
                return false;
            }
            at = part.len();
            continue;
        }
        let is_last = i == parts.len() - 1;
        if is_last && anchored {
            return path.len() >= at + part.len() && path.ends_with(part);
        }
        match path[at..].find(part) {
            Some(p) => at += p + part.len(),
            None => return false,
        }
    }
    !anchored || at == path.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TXT: &str = "# example\nUser-agent: *\nDisallow: /private/\nAllow: /private/open\nDisallow: /*.pdf$\nCrawl-delay: 2\n\nUser-agent: OtherBot\nUser-agent: evidentbot\nDisallow: /nobots\n";

    #[test]
    fn the_named_group_wins_over_the_star() {
        let r = Robots::parse(TXT, "EvidentBot");
        assert!(!r.allowed("/nobots/x"));
        assert!(r.allowed("/private/a"), "the * group does not apply");
        assert_eq!(r.crawl_delay_secs, None);
    }

    #[test]
    fn longest_match_and_wildcards() {
        let r = Robots::parse(TXT, "SomeCrawler");
        assert!(!r.allowed("/private/a"));
        assert!(r.allowed("/private/open/b"), "longer Allow wins");
        assert!(!r.allowed("/docs/a.pdf"));
        assert!(r.allowed("/docs/a.pdf?x=1"), "$ anchors the end");
        assert!(r.allowed("/"));
        assert_eq!(r.crawl_delay_secs, Some(2.0));
    }

    #[test]
    fn empty_and_failing() {
        assert!(Robots::parse("", "x").allowed("/a"));
        assert!(Robots::parse("User-agent: *\nDisallow:\n", "x").allowed("/a"));
        assert!(!Robots::disallow_all().allowed("/"));
        assert!(matches("/a*b*c", "/a-b-c"));
        assert!(!matches("/a*b*c$", "/a-b-cd"));
        assert!(matches("/a*b*c$", "/a-b-c"));
    }
}
