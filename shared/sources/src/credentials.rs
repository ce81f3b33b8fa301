//! Which environment variables a source may name for its credentials (`tokenEnv`,
//! `emailEnv`, `usernameEnv`, `passwordEnv`), for which clients and which hosts.
//!
//! A source's settings name a variable; the server reads its value when connecting and sends
//! it to the source's host. Without a rule, any client admin could name any variable of the
//! server's environment (a database password, the JWT secret, another client's token) and a
//! host of their own, and receive the value. So the operator lists each variable a source may
//! name in `[sources.credentials.NAME]`, with the clients whose sources may use it and the
//! hosts it may be sent to; nothing else is read.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;

use crate::access::AccessError;

/// `[sources.credentials.NAME]`: who may use the variable `NAME`, and where it may go.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialRule {
    /// Clients whose sources may name it (`"*"`: every client).
    pub clients: Vec<String>,
    /// Hosts it may be sent to: exact names (any case) or `*.example.com` (subdomains). A
    /// source that names it may reach no other host.
    #[serde(default)]
    pub hosts: Vec<String>,
}

/// The configured rules, by variable name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CredentialRules {
    rules: Arc<BTreeMap<String, CredentialRule>>,
    /// Tests only: every variable, every client, every host.
    any: bool,
}

/// A variable name as sources may name it: A-Z, 0-9, `_`.
pub fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

fn host_matches(pattern: &str, host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    match pattern.strip_prefix("*.") {
        Some(suffix) => host
            .strip_suffix(suffix)
            .is_some_and(|rest| rest.ends_with('.') && rest.len() > 1),
        None => host == pattern,
    }
}

impl CredentialRules {
    /// The configured rules, checked.
    pub fn new(rules: &BTreeMap<String, CredentialRule>) -> Result<CredentialRules, String> {
        let mut out = BTreeMap::new();
        for (name, rule) in rules {
            let at = |why: &str| format!("sources.credentials.{name}: {why}");
            if !valid_env_name(name) {
                return Err(at("name an environment variable (A-Z, 0-9, _)"));
            }
            if rule.clients.is_empty() || rule.clients.iter().any(|c| c.trim().is_empty()) {
                return Err(at(
                    "`clients` lists the clients whose sources may use it (\"*\": all)",
                ));
            }
            if rule
                .hosts
                .iter()
                .any(|h| h.is_empty() || h.contains(['/', ':', ' ', '@']))
            {
                return Err(at(
                    "`hosts` lists host names (`api.github.com`, `*.corp.example`)",
                ));
            }
            let hosts = rule.hosts.iter().map(|h| h.to_ascii_lowercase()).collect();
            out.insert(
                name.clone(),
                CredentialRule {
                    clients: rule.clients.clone(),
                    hosts,
                },
            );
        }
        Ok(CredentialRules {
            rules: Arc::new(out),
            any: false,
        })
    }

    /// Tests: every variable allowed everywhere.
    pub fn any_for_tests() -> CredentialRules {
        CredentialRules {
            rules: Arc::default(),
            any: true,
        }
    }

    /// Whether a source of `client` reaching `urls` may name `env` in `field`. The refusal is
    /// the same whether the variable is unknown or listed for others: it tells a caller
    /// nothing about the operator's other clients.
    pub fn check(
        &self,
        field: &str,
        env: &str,
        client: &str,
        urls: &[String],
    ) -> Result<(), AccessError> {
        if self.any {
            return Ok(());
        }
        let hosts: Vec<String> = urls
            .iter()
            .filter_map(|u| url::Url::parse(u).ok())
            .filter_map(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_string()))
            .collect();
        let allowed = self.rules.get(env).is_some_and(|r| {
            r.clients.iter().any(|c| c == "*" || c == client)
                && hosts
                    .iter()
                    .all(|h| r.hosts.iter().any(|p| host_matches(p, h)))
        });
        if allowed {
            Ok(())
        } else {
            Err(AccessError::CredentialNotAllowed(format!(
                "`{field}` names `{}`, which the server does not allow for client `{client}`{}: the operator lists the environment variables sources may use, with their clients and hosts, in [sources.credentials]",
                env.escape_debug(),
                if hosts.is_empty() {
                    String::new()
                } else {
                    format!(" and host {}", hosts.join(", "))
                }
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(entries: &[(&str, &[&str], &[&str])]) -> Result<CredentialRules, String> {
        CredentialRules::new(
            &entries
                .iter()
                .map(|(n, c, h)| {
                    (
                        n.to_string(),
                        CredentialRule {
                            clients: c.iter().map(|s| s.to_string()).collect(),
                            hosts: h.iter().map(|s| s.to_string()).collect(),
                        },
                    )
                })
                .collect(),
        )
    }

    #[test]
    fn a_variable_goes_only_to_its_clients_and_hosts() {
        let r = rules(&[
            ("ACME_GITHUB", &["acme"], &["api.github.com"]),
            ("CORP_TOKEN", &["*"], &["*.corp.example"]),
        ])
        .expect("valid");
        let gh = vec!["https://api.github.com".to_string()];
        assert!(r.check("tokenEnv", "ACME_GITHUB", "acme", &gh).is_ok());
        // Another client, another host, an unlisted variable: the same refusal.
        for (env, client, url) in [
            ("ACME_GITHUB", "beta", "https://api.github.com"),
            ("ACME_GITHUB", "acme", "https://attacker.example"),
            ("EVIDENT_JWT_SECRET", "acme", "https://api.github.com"),
            ("CORP_TOKEN", "beta", "https://corp.example"),
        ] {
            let e = r
                .check("tokenEnv", env, client, &[url.to_string()])
                .expect_err("refused");
            assert_eq!(e.code(), "credential_not_allowed");
            assert!(!e.to_string().contains("acme") || client == "acme", "{e}");
        }
        assert!(
            r.check(
                "tokenEnv",
                "CORP_TOKEN",
                "beta",
                &["https://git.CORP.example/x".into()]
            )
            .is_ok()
        );
        assert!(
            CredentialRules::default()
                .check("tokenEnv", "X", "a", &[])
                .is_err()
        );
        assert!(
            CredentialRules::any_for_tests()
                .check("tokenEnv", "X", "a", &[])
                .is_ok()
        );
    }

    #[test]
    fn rules_are_checked() {
        assert!(rules(&[("lower", &["a"], &[])]).is_err());
        assert!(rules(&[("A", &[], &[])]).is_err());
        assert!(rules(&[("A", &["a"], &["https://x"])]).is_err());
    }
}
