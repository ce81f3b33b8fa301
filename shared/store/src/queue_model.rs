//! The model of the queue's state machine, for backends' property tests: any sequence of
//! enqueue, claim, heartbeat, complete, fail (retryable | permanent), release, reorder,
//! retry, time passing (lease expiry, backoff) and restart must keep the store and the model
//! in step — no task lost, never two live leases on one task, claims in exactly the
//! specified order, counters right. One model, so every backend is held to the same rule.
//!
//! A backend's test implements [`Subject`] (how to reach its queue, how to restart it, its
//! own extra invariants) and runs [`run`] under `proptest!` with [`ops`].

use std::collections::HashMap;

use evident_core::Scope;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::queue::{
    BackoffPolicy, Failure, LeaseToken, NewTask, PriorityBand, TaskFilter, TaskQueue, TaskRecord,
    TaskState,
};

/// The lease every claim in the model takes.
pub const LEASE: i64 = 30_000;

#[derive(Debug, Clone)]
pub enum Op {
    Enqueue { source: u8, priority: u8 },
    Claim { band: u8 },
    Heartbeat { lease: usize },
    Complete { lease: usize },
    Fail { lease: usize, retryable: bool },
    Release { lease: usize },
    Reorder { task: usize, position: i64 },
    Retry { task: usize },
    Advance { ms: i64 },
    Restart,
}

/// The model's task of `source` (one source urn and payload per number) at `priority`.
pub fn task(source: u8, priority: u8) -> NewTask {
    NewTask {
        kind: "ingest".into(),
        scope: Scope::client("c"),
        source_urn: format!("urn:{source}"),
        priority,
        payload: serde_json::json!({"s": source}),
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..3, 0u8..10).prop_map(|(source, priority)| Op::Enqueue { source, priority }),
        4 => (0u8..3).prop_map(|band| Op::Claim { band }),
        1 => (0usize..4).prop_map(|lease| Op::Heartbeat { lease }),
        2 => (0usize..4).prop_map(|lease| Op::Complete { lease }),
        2 => (0usize..4, any::<bool>()).prop_map(|(lease, retryable)| Op::Fail { lease, retryable }),
        1 => (0usize..4).prop_map(|lease| Op::Release { lease }),
        1 => (0usize..8, 1i64..4).prop_map(|(task, position)| Op::Reorder { task, position }),
        1 => (0usize..8).prop_map(|task| Op::Retry { task }),
        2 => (0i64..90_000).prop_map(|ms| Op::Advance { ms }),
        1 => Just(Op::Restart),
    ]
}

/// Sequences of 1..60 operations.
pub fn ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 1..60)
}

/// What a backend's test provides.
pub trait Subject {
    fn queue(&self) -> &dyn TaskQueue;
    /// Simulates a process restart: the queue is reopened from its durable state.
    fn restart(&mut self);
    /// The backend's own invariants, checked after every step.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

#[derive(Debug, Clone)]
struct ModelTask {
    id: String,
    seq: usize,
    source: u8,
    priority: u8,
    position: Option<i64>,
    state: TaskState,
    retries: u32,
    attempts: u32,
    next_retry_at: Option<i64>,
    lease_expires_at: Option<i64>,
    epoch: i64,
}

fn unfinished(s: TaskState) -> bool {
    matches!(
        s,
        TaskState::Queued | TaskState::Processing | TaskState::RetryWait
    )
}

#[derive(Default)]
struct Model {
    tasks: Vec<ModelTask>,
}

impl Model {
    fn eligible(t: &ModelTask, now: i64) -> bool {
        match t.state {
            TaskState::Queued => true,
            TaskState::RetryWait => t.next_retry_at.is_some_and(|at| at <= now),
            TaskState::Processing => t.lease_expires_at.is_some_and(|at| at <= now),
            _ => false,
        }
    }

    /// The contract of `TaskQueue::claim`: eligible, in the band, no older unfinished task of
    /// its source and no other live lease in its source; first by priority, explicit position
    /// (unset last), creation.
    fn expected_claim(&self, band: PriorityBand, now: i64) -> Option<usize> {
        let mut candidates: Vec<&ModelTask> = self
            .tasks
            .iter()
            .filter(|t| Self::eligible(t, now) && t.priority >= band.min && t.priority <= band.max)
            .filter(|t| {
                !self.tasks.iter().any(|o| {
                    o.source == t.source
                        && ((o.seq < t.seq && unfinished(o.state))
                            || (o.seq != t.seq
                                && o.state == TaskState::Processing
                                && o.lease_expires_at.is_some_and(|e| e > now)))
                })
            })
            .collect();
        candidates.sort_by_key(|t| {
            (
                t.priority,
                t.position.is_none(),
                t.position.unwrap_or(0),
                t.seq,
            )
        });
        candidates.first().map(|t| t.seq)
    }
}

fn band(b: u8) -> PriorityBand {
    match b {
        0 => PriorityBand::ALL,
        1 => PriorityBand::INTERACTIVE,
        _ => PriorityBand::BULK,
    }
}

/// Runs `ops` against the subject's queue and the model, failing at the first divergence.
pub async fn run(subject: &mut dyn Subject, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut run = Run {
        model: Model::default(),
        leases: Vec::new(),
        now: 1_000,
        policy: BackoffPolicy::default(),
    };
    for op in ops {
        if let Op::Restart = op {
            subject.restart();
        }
        run.step(subject.queue(), op).await?;
        run.check_invariants(subject).await?;
    }
    let counts = subject.queue().counts(None).await.expect("counts");
    let total: u64 = TaskState::ALL.iter().map(|s| counts.state(*s)).sum();
    prop_assert_eq!(total as usize, run.model.tasks.len());
    Ok(())
}

/// The state of one run: the model, the leases handed out (token, task), and the clock.
struct Run {
    model: Model,
    leases: Vec<(LeaseToken, usize)>,
    now: i64,
    policy: BackoffPolicy,
}

impl Run {
    /// Applies `op` to the queue and the model; operations naming a lease or task that does
    /// not exist do nothing.
    async fn step(&mut self, q: &dyn TaskQueue, op: Op) -> Result<(), TestCaseError> {
        match op {
            Op::Enqueue { source, priority } => self.enqueue(q, source, priority).await?,
            Op::Claim { band: b } => self.claim(q, band(b)).await?,
            Op::Heartbeat { lease }
            | Op::Complete { lease }
            | Op::Fail { lease, .. }
            | Op::Release { lease }
                if lease >= self.leases.len() => {}
            Op::Heartbeat { lease } => self.heartbeat(q, lease).await?,
            Op::Complete { lease } | Op::Fail { lease, .. } | Op::Release { lease } => {
                self.finish(q, &op, lease).await?
            }
            Op::Reorder { task, .. } | Op::Retry { task } if task >= self.model.tasks.len() => {}
            Op::Reorder { task, position } => self.reorder(q, task, position).await,
            Op::Retry { task } => self.retry(q, task).await?,
            Op::Advance { ms } => self.now += ms,
            Op::Restart => {}
        }
        Ok(())
    }

    /// Enqueues a task of `source`: it is queued, and the model has it last.
    async fn enqueue(
        &mut self,
        q: &dyn TaskQueue,
        source: u8,
        priority: u8,
    ) -> Result<(), TestCaseError> {
        let rec = q
            .enqueue(task(source, priority), self.now)
            .await
            .expect("enqueue");
        prop_assert_eq!(rec.state, TaskState::Queued);
        let seq = self.model.tasks.len();
        self.model.tasks.push(ModelTask {
            id: rec.task_id,
            seq,
            source,
            priority,
            position: None,
            state: TaskState::Queued,
            retries: 0,
            attempts: 0,
            next_retry_at: None,
            lease_expires_at: None,
            epoch: 0,
        });
        Ok(())
    }

    /// Claims in `band`: the store hands out exactly the task the model expects (or none),
    /// under a new epoch.
    async fn claim(&mut self, q: &dyn TaskQueue, band: PriorityBand) -> Result<(), TestCaseError> {
        let now = self.now;
        let expected = self.model.expected_claim(band, now);
        let got = q.claim("w", band, LEASE, now).await.expect("claim");
        match (expected, got) {
            (None, None) => {}
            (Some(seq), Some(claim)) => {
                let t = &mut self.model.tasks[seq];
                prop_assert_eq!(&claim.task.task_id, &t.id, "claim order");
                prop_assert!(claim.token.epoch > t.epoch, "a new lease has a new epoch");
                prop_assert_eq!(claim.payload["s"].as_u64(), Some(u64::from(t.source)));
                t.state = TaskState::Processing;
                t.attempts += 1;
                t.epoch = claim.token.epoch;
                t.lease_expires_at = Some(now + LEASE);
                t.next_retry_at = None;
                self.leases.push((claim.token, seq));
            }
            (e, g) => prop_assert!(
                false,
                "expected {:?}, got {:?}",
                e.map(|s| self.model.tasks[s].id.clone()),
                g.map(|c| c.task.task_id)
            ),
        }
        Ok(())
    }

    /// Whether lease number `lease` is the current lease of its task; the lease and the task.
    fn current(&self, lease: usize) -> (bool, LeaseToken, usize) {
        let (token, seq) = self.leases[lease].clone();
        let current = self.model.tasks[seq].state == TaskState::Processing
            && self.model.tasks[seq].epoch == token.epoch;
        (current, token, seq)
    }

    /// Heartbeats lease number `lease`: only the current lease extends its task's.
    async fn heartbeat(&mut self, q: &dyn TaskQueue, lease: usize) -> Result<(), TestCaseError> {
        let (current, token, seq) = self.current(lease);
        let ok = q
            .heartbeat(&token, LEASE, self.now)
            .await
            .expect("heartbeat");
        prop_assert_eq!(ok, current, "only the current lease heartbeats");
        if ok {
            self.model.tasks[seq].lease_expires_at = Some(self.now + LEASE);
        }
        Ok(())
    }

    /// Completes, fails or releases (`op`) under lease number `lease`: only the current lease
    /// may, and the task moves to done, retry-wait (with backoff), error or queued.
    async fn finish(
        &mut self,
        q: &dyn TaskQueue,
        op: &Op,
        lease: usize,
    ) -> Result<(), TestCaseError> {
        let (current, token, seq) = self.current(lease);
        let now = self.now;
        let ok = match op {
            Op::Complete { .. } => q.complete(&token, now).await.expect("complete"),
            Op::Release { .. } => q.release(&token, now).await.expect("release"),
            Op::Fail { retryable, .. } => {
                let f = if *retryable {
                    Failure::Retryable("busy".into())
                } else {
                    Failure::Permanent("bad".into())
                };
                q.fail(&token, f, &self.policy, now).await.expect("fail")
            }
            _ => unreachable!("matched above"),
        };
        prop_assert_eq!(ok, current, "only the current lease may finish a task");
        if ok {
            let t = &mut self.model.tasks[seq];
            t.lease_expires_at = None;
            match op {
                Op::Complete { .. } => t.state = TaskState::Done,
                Op::Release { .. } => t.state = TaskState::Queued,
                Op::Fail {
                    retryable: true, ..
                } => {
                    t.retries += 1;
                    t.state = TaskState::RetryWait;
                    t.next_retry_at = Some(now + self.policy.delay(&t.id, t.retries));
                }
                _ => t.state = TaskState::Error,
            }
        }
        Ok(())
    }

    /// Moves task number `task` to `position` in its priority: unfinished tasks at or after
    /// it move down one.
    async fn reorder(&mut self, q: &dyn TaskQueue, task: usize, position: i64) {
        let id = self.model.tasks[task].id.clone();
        q.reorder(&id, position, self.now)
            .await
            .expect("reorder")
            .expect("exists");
        let prio = self.model.tasks[task].priority;
        for t in self.model.tasks.iter_mut() {
            if t.id != id
                && t.priority == prio
                && unfinished(t.state)
                && t.position.is_some_and(|p| p >= position)
            {
                t.position = t.position.map(|p| p + 1);
            }
        }
        self.model.tasks[task].position = Some(position);
    }

    /// Retries task number `task`: an errored task is queued again; any other is refused.
    async fn retry(&mut self, q: &dyn TaskQueue, task: usize) -> Result<(), TestCaseError> {
        let id = self.model.tasks[task].id.clone();
        let r = q.retry(&id, self.now).await;
        if self.model.tasks[task].state == TaskState::Error {
            prop_assert_eq!(
                r.map(|t| t.map(|t| t.state)).ok(),
                Some(Some(TaskState::Queued))
            );
            self.model.tasks[task].state = TaskState::Queued;
            self.model.tasks[task].next_retry_at = None;
        } else {
            prop_assert!(r.is_err(), "retry of a non-error task is refused");
        }
        Ok(())
    }

    /// The invariants against the store's own view: every task present with the model's
    /// state, counters, position and retry time; one live lease per processing task; and
    /// the backend's own.
    async fn check_invariants(&self, subject: &dyn Subject) -> Result<(), TestCaseError> {
        let q = subject.queue();
        let all = q
            .list(&TaskFilter {
                limit: 1000,
                ..Default::default()
            })
            .await
            .expect("list");
        prop_assert_eq!(
            all.len(),
            self.model.tasks.len(),
            "no task lost or invented"
        );
        let by_id: HashMap<&str, &TaskRecord> =
            all.iter().map(|t| (t.task_id.as_str(), t)).collect();
        for m in &self.model.tasks {
            let t = by_id.get(m.id.as_str()).expect("present");
            prop_assert_eq!(t.state, m.state, "state of {}", m.id);
            prop_assert_eq!(
                (t.retries, t.attempts),
                (m.retries, m.attempts),
                "counters of {}",
                m.id
            );
            prop_assert_eq!(t.queue_position, m.position, "position of {}", m.id);
            prop_assert_eq!(t.next_retry_at, m.next_retry_at, "next retry of {}", m.id);
        }
        let now = self.now;
        for t in self.model.tasks.iter().filter(|t| {
            t.state == TaskState::Processing && t.lease_expires_at.is_some_and(|e| e > now)
        }) {
            prop_assert_eq!(
                self.leases
                    .iter()
                    .filter(|(tok, s)| *s == t.seq && tok.epoch == t.epoch)
                    .count(),
                1,
                "one live lease per task"
            );
        }
        subject.check().map_err(TestCaseError::fail)?;
        Ok(())
    }
}
