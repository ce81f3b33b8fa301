//! The rate-limit signals of GitHub, GitLab and Jira, read from a response: when the source
//! says "not now" (a refusal), and when it says "this was the last one for a while" (a spent
//! or nearly spent budget on a successful answer).
//!
//! - GitHub: primary limit `x-ratelimit-remaining` / `x-ratelimit-reset` (epoch seconds);
//!   secondary limits as 403 or 429 with `retry-after`, or with a "secondary rate limit"
//!   (formerly "abuse detection") message and no header, where GitHub asks for at least a
//!   minute (docs.github.com, "Rate limits for the REST API", "Best practices").
//! - GitLab: `ratelimit-remaining` / `ratelimit-reset` (epoch seconds), `ratelimit-resettime`
//!   (HTTP date), 429 with `retry-after` (docs.gitlab.com, "Rate limits").
//! - Jira Cloud: 429 (and some 503) with `retry-after` and `x-ratelimit-reset`
//!   (`yyyy-MM-ddTHH:mmZ`), `x-ratelimit-remaining`, `x-ratelimit-nearlimit: true` when less
//!   than a fifth of a budget is left, `ratelimit-reason` (developer.atlassian.com, "Rate
//!   limiting").

use reqwest::header::HeaderMap;

/// A wait longer than this is capped (the next poll asks again).
pub const MAX_WAIT_MS: i64 = 3_600_000;
/// When a limit names no wait: GitHub's "at least one minute".
pub const DEFAULT_WAIT_MS: i64 = 60_000;

/// "Not now, and not until then".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub ms: i64,
    /// Which signal said so, for the source's status.
    pub reason: String,
}

fn text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// What is left of the budget: GitHub and Jira `x-ratelimit-remaining`, GitLab
/// `ratelimit-remaining`.
pub fn remaining(headers: &HeaderMap) -> Option<u64> {
    text(headers, "x-ratelimit-remaining")
        .or_else(|| text(headers, "ratelimit-remaining"))
        .and_then(|v| v.parse().ok())
}

/// `Retry-After` in ms: seconds, or an HTTP date (a date in the past is no wait).
pub fn retry_after_ms(headers: &HeaderMap, now_ms: i64) -> Option<i64> {
    let v = text(headers, "retry-after")?;
    if let Ok(secs) = v.parse::<i64>() {
        return Some(secs.max(0).saturating_mul(1000));
    }
    Some((http_date_ms(v)? - now_ms).max(0))
}

/// When the budget comes back, in ms from now: `x-ratelimit-reset` (GitHub epoch seconds,
/// Jira ISO 8601), `ratelimit-reset` (GitLab epoch seconds), `ratelimit-resettime` (GitLab
/// HTTP date). A small number is read as seconds to wait.
pub fn reset_ms(headers: &HeaderMap, now_ms: i64) -> Option<i64> {
    let at = |v: &str| -> Option<i64> {
        if let Ok(n) = v.parse::<i64>() {
            return Some(match n {
                n if n > 100_000_000_000 => n.saturating_sub(now_ms),
                n if n > 1_000_000_000 => n.saturating_mul(1000).saturating_sub(now_ms),
                n => n.saturating_mul(1000),
            });
        }
        iso_ms(v).or_else(|| http_date_ms(v)).map(|t| t - now_ms)
    };
    [
        "x-ratelimit-reset",
        "ratelimit-reset",
        "ratelimit-resettime",
    ]
    .iter()
    .find_map(|n| text(headers, n).and_then(at))
    .map(|ms| ms.max(0))
}

/// A refusal that is a rate limit, with the wait it asks for; `None` for any other answer.
/// `message` is the error body's message (GitHub's secondary limits say so only there).
pub fn refusal(
    what: &str,
    status: u16,
    headers: &HeaderMap,
    message: &str,
    now_ms: i64,
) -> Option<Wait> {
    let retry = retry_after_ms(headers, now_ms);
    let spent = remaining(headers) == Some(0);
    let lower = message.to_lowercase();
    let secondary = lower.contains("secondary rate limit") || lower.contains("abuse detection");
    let limited = match status {
        429 => true,
        403 => retry.is_some() || spent || secondary || lower.contains("rate limit"),
        // Atlassian: "some transient 5XX errors are accompanied by a Retry-After header".
        500..=599 => retry.is_some(),
        _ => false,
    };
    if !limited {
        return None;
    }
    let (ms, signal) = match (retry, spent.then(|| reset_ms(headers, now_ms)).flatten()) {
        (Some(ms), _) => (ms, "retry-after".to_string()),
        (None, Some(ms)) => (ms, "the budget is spent until its reset".to_string()),
        (None, None) => (DEFAULT_WAIT_MS, "no wait named: a minute".to_string()),
    };
    let kind = if secondary || (status == 403 && !spent) {
        "secondary rate limit"
    } else if status >= 500 {
        "overloaded"
    } else {
        "rate limit"
    };
    let mut reason = format!("{what}: {kind} (HTTP {status}; {signal}");
    if let Some(r) = text(headers, "ratelimit-reason").or_else(|| text(headers, "ratelimit-name")) {
        reason.push_str(&format!("; {r}"));
    }
    reason.push(')');
    Some(Wait {
        ms: ms.clamp(1000, MAX_WAIT_MS),
        reason,
    })
}

/// A successful answer that was the last one for a while: the budget is spent
/// (`remaining: 0`, until its reset) or nearly spent (Jira's `x-ratelimit-nearlimit`, until
/// its reset or a minute). The answer itself is used; the requests after it wait.
pub fn exhausted(what: &str, headers: &HeaderMap, now_ms: i64) -> Option<Wait> {
    let near =
        text(headers, "x-ratelimit-nearlimit").is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let spent = remaining(headers) == Some(0);
    if !spent && !near {
        return None;
    }
    let ms = retry_after_ms(headers, now_ms)
        .or_else(|| reset_ms(headers, now_ms))
        .unwrap_or(DEFAULT_WAIT_MS);
    let reason = if spent {
        format!("{what}: the rate-limit budget is spent (remaining 0) until its reset")
    } else {
        format!("{what}: near the rate limit (x-ratelimit-nearlimit: less than 20% left)")
    };
    Some(Wait {
        ms: ms.clamp(1000, MAX_WAIT_MS),
        reason,
    })
}

/// `Wed, 21 Oct 2015 07:28:00 GMT` as epoch ms.
fn http_date_ms(v: &str) -> Option<i64> {
    let parts: Vec<&str> = v.split_whitespace().collect();
    if parts.len() != 6 || parts[5] != "GMT" {
        return None;
    }
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| *m == parts[2])?
        + 1;
    iso_ms(&format!(
        "{}-{month:02}-{:0>2}T{}Z",
        parts[3], parts[1], parts[4]
    ))
}

/// RFC 3339, or Atlassian's `yyyy-MM-ddTHH:mmZ` (no seconds), as epoch ms.
fn iso_ms(v: &str) -> Option<i64> {
    let t = humantime::parse_rfc3339_weak(v.trim_end_matches('Z'))
        .ok()
        .or_else(|| humantime::parse_rfc3339(v).ok())
        .or_else(|| {
            let minutes = v.strip_suffix('Z')?;
            humantime::parse_rfc3339(&format!("{minutes}:00Z")).ok()
        })?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(d.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    fn h(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.insert(*k, HeaderValue::from_static(v));
        }
        m
    }

    /// 2026-01-09T11:00:00Z.
    const NOW: i64 = 1_767_956_400_000;

    #[test]
    fn waits_from_headers() {
        assert_eq!(retry_after_ms(&h(&[("retry-after", "7")]), NOW), Some(7000));
        assert_eq!(
            retry_after_ms(&h(&[("retry-after", "Fri, 09 Jan 2026 11:00:30 GMT")]), NOW),
            Some(30_000)
        );
        assert_eq!(
            retry_after_ms(&h(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]), NOW),
            Some(0),
            "a date in the past: no wait"
        );
        assert_eq!(retry_after_ms(&HeaderMap::new(), NOW), None);
        // GitHub and GitLab: epoch seconds; Jira: minutes in ISO 8601; GitLab: an HTTP date.
        assert_eq!(
            reset_ms(&h(&[("x-ratelimit-reset", "1767956700")]), NOW),
            Some(300_000)
        );
        assert_eq!(
            reset_ms(&h(&[("ratelimit-reset", "1767956460")]), NOW),
            Some(60_000)
        );
        assert_eq!(
            reset_ms(&h(&[("x-ratelimit-reset", "2026-01-09T11:02Z")]), NOW),
            Some(120_000)
        );
        assert_eq!(
            reset_ms(
                &h(&[("ratelimit-resettime", "Fri, 09 Jan 2026 11:01:00 GMT")]),
                NOW
            ),
            Some(60_000)
        );
        assert_eq!(
            reset_ms(&h(&[("x-ratelimit-reset", "30")]), NOW),
            Some(30_000)
        );
        // Hostile values neither overflow nor wait for ever.
        let huge = h(&[
            ("retry-after", "9223372036854775807"),
            ("x-ratelimit-remaining", "0"),
        ]);
        assert_eq!(retry_after_ms(&huge, NOW), Some(i64::MAX));
        assert_eq!(
            refusal("x", 429, &huge, "", NOW).map(|w| w.ms),
            Some(MAX_WAIT_MS)
        );
        assert_eq!(
            reset_ms(&h(&[("ratelimit-reset", "-5")]), NOW),
            Some(0),
            "a reset in the past is no wait"
        );
    }

    #[test]
    fn refusals_that_are_rate_limits() {
        // GitHub secondary limit with retry-after.
        let w = refusal(
            "github",
            403,
            &h(&[("retry-after", "60")]),
            "You have exceeded a secondary rate limit.",
            NOW,
        )
        .expect("limited");
        assert_eq!(w.ms, 60_000);
        assert!(w.reason.contains("secondary rate limit"), "{}", w.reason);
        // … without any header: at least a minute.
        let w = refusal("github", 403, &HeaderMap::new(), "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", NOW)
            .expect("limited");
        assert_eq!(w.ms, DEFAULT_WAIT_MS);
        // Primary limit: 403 with remaining 0 waits until the reset.
        let w = refusal(
            "github",
            403,
            &h(&[
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", "1767956700"),
            ]),
            "API rate limit exceeded for user ID 1.",
            NOW,
        )
        .expect("limited");
        assert_eq!(w.ms, 300_000);
        assert!(w.reason.contains("budget is spent"), "{}", w.reason);
        // Refused credentials are not a rate limit.
        assert!(
            refusal(
                "github",
                403,
                &h(&[("x-ratelimit-remaining", "4999")]),
                "Resource not accessible by integration",
                NOW
            )
            .is_none()
        );
        assert!(refusal("github", 401, &HeaderMap::new(), "Bad credentials", NOW).is_none());
        // Jira 429 names its reason; a 503 with retry-after waits, one without does not.
        let w = refusal(
            "jira",
            429,
            &h(&[
                ("retry-after", "3"),
                ("ratelimit-reason", "jira-burst-based"),
            ]),
            "",
            NOW,
        )
        .expect("limited");
        assert_eq!(w.ms, 3000);
        assert!(w.reason.contains("jira-burst-based"), "{}", w.reason);
        assert!(refusal("jira", 503, &h(&[("retry-after", "5")]), "", NOW).is_some());
        assert!(refusal("jira", 503, &HeaderMap::new(), "", NOW).is_none());
    }

    #[test]
    fn successful_answers_that_spend_the_budget() {
        let w = exhausted(
            "github",
            &h(&[
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", "1767956700"),
            ]),
            NOW,
        )
        .expect("spent");
        assert_eq!(w.ms, 300_000);
        let w = exhausted(
            "gitlab",
            &h(&[
                ("ratelimit-remaining", "0"),
                ("ratelimit-reset", "1767956460"),
            ]),
            NOW,
        )
        .expect("spent");
        assert_eq!(w.ms, 60_000);
        let w = exhausted("jira", &h(&[("x-ratelimit-nearlimit", "true")]), NOW).expect("near");
        assert_eq!(w.ms, DEFAULT_WAIT_MS);
        assert!(exhausted("github", &h(&[("x-ratelimit-remaining", "12")]), NOW).is_none());
        assert!(exhausted("jira", &h(&[("x-ratelimit-nearlimit", "false")]), NOW).is_none());
    }
}
