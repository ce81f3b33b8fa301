//! Rate limits: a token bucket per caller (a token, or an address for failed
//! authentications), refilled continuously.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// `rate` requests a second on average, bursts up to `burst`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub per_sec: f64,
    pub burst: f64,
}

impl RateLimit {
    /// Failed authentications per address by default: 20 at once, then one a second.
    pub const FAILED_AUTH: RateLimit = RateLimit {
        per_sec: 1.0,
        burst: 20.0,
    };
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

pub struct RateLimiter {
    limit: RateLimit,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl RateLimiter {
    pub fn new(limit: RateLimit) -> RateLimiter {
        RateLimiter {
            limit,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `caller`'s bucket holds a request at `now` (`Err(wait)` when it is empty),
    /// taking nothing.
    pub fn peek(&self, caller: &str, now: Instant) -> Result<(), Duration> {
        let buckets = self.buckets.lock();
        let Some(b) = buckets.get(caller) else {
            return Ok(());
        };
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        let tokens = (b.tokens + elapsed * self.limit.per_sec).min(self.limit.burst);
        if tokens >= 1.0 {
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - tokens) / self.limit.per_sec))
        }
    }

    /// Takes one request from `caller`'s bucket at `now`; `Err(wait)` when it is empty.
    pub fn take(&self, caller: &str, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock();
        // Forget idle callers so the map stays bounded by the active ones.
        if buckets.len() > 10_000 {
            let full = self.limit.burst / self.limit.per_sec;
            buckets.retain(|_, b| now.duration_since(b.at).as_secs_f64() < full);
        }
        let b = buckets.entry(caller.to_string()).or_insert(Bucket {
            tokens: self.limit.burst,
            at: now,
        });
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed * self.limit.per_sec).min(self.limit.burst);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                (1.0 - b.tokens) / self.limit.per_sec,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_served_then_refused_until_the_bucket_refills() {
        let r = RateLimiter::new(RateLimit {
            per_sec: 2.0,
            burst: 3.0,
        });
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(r.take("a", t0).is_ok());
        }
        let wait = r.take("a", t0).expect_err("empty");
        assert!(wait <= Duration::from_millis(500) && wait > Duration::ZERO);
        assert!(r.take("b", t0).is_ok(), "callers are apart");
        assert!(r.peek("a", t0 + Duration::from_millis(500)).is_ok());
        assert!(r.take("a", t0 + Duration::from_millis(500)).is_ok());
        assert!(r.peek("a", t0 + Duration::from_millis(500)).is_err());
        assert!(r.take("a", t0 + Duration::from_millis(500)).is_err());
        assert!(r.peek("c", t0).is_ok(), "a new caller has a full bucket");
    }
}
