//! Write priority: interactive writes (priority ≤ 2) take their own concurrency pool, so a
//! chat or agent store completes in seconds while bulk indexing saturates the bulk pool.
//! The permit is held across the whole write path (embedding calls and store writes).

use std::sync::Arc;

use evident_ai::Priority;
use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct PoolConfig {
    /// Concurrent writes with priority ≤ 2.
    pub interactive: usize,
    /// Concurrent writes with priority > 2.
    pub bulk: usize,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            interactive: 4,
            bulk: 16,
        }
    }
}

#[derive(Clone)]
pub struct WritePools {
    interactive: Arc<Semaphore>,
    bulk: Arc<Semaphore>,
}

impl WritePools {
    pub fn new(cfg: PoolConfig) -> Self {
        WritePools {
            interactive: Arc::new(Semaphore::new(cfg.interactive.max(1))),
            bulk: Arc::new(Semaphore::new(cfg.bulk.max(1))),
        }
    }

    pub async fn acquire(&self, priority: Priority) -> OwnedSemaphorePermit {
        let pool = if priority.is_interactive() {
            &self.interactive
        } else {
            &self.bulk
        };
        pool.clone()
            .acquire_owned()
            .await
            .expect("write pools are never closed")
    }

    /// (interactive, bulk) permits currently free, for metrics and tests.
    pub fn available(&self) -> (usize, usize) {
        (
            self.interactive.available_permits(),
            self.bulk.available_permits(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn interactive_writes_do_not_wait_for_a_saturated_bulk_pool() {
        let pools = WritePools::new(PoolConfig {
            interactive: 1,
            bulk: 1,
        });
        let _bulk = pools.acquire(Priority::DEFAULT).await;
        assert_eq!(
            pools.available(),
            (1, 0),
            "bulk pool saturated, interactive untouched"
        );
        let _interactive = pools.acquire(Priority::INTERACTIVE).await;
        assert_eq!(pools.available(), (0, 0));
        assert!(Priority::new(2).expect("valid").is_interactive());
        assert!(!Priority::new(3).expect("valid").is_interactive());
    }
}
