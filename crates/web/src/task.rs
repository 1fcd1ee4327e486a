//! Spawning the exporter's tasks so that they log where, and as what, the code that spawned them
//! logs: each task carries the spawner's `tracing` subscriber, so an exporter started under a
//! subscriber of its own (a test's, for one) writes every line there, and the spawner's span, so
//! an account's work keeps `account=NAME` on every line. A leaf: it imports nothing of the crate.

use tracing::Instrument as _;
use tracing::instrument::WithSubscriber as _;

/// [`tokio::spawn`], keeping the current subscriber and span.
pub fn spawn<F>(future: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(future.in_current_span().with_current_subscriber())
}

/// [`JoinSet::spawn`](tokio::task::JoinSet::spawn), keeping the current subscriber and span:
/// the task runs until it ends or the set is dropped.
pub fn spawn_into<F>(set: &mut tokio::task::JoinSet<F::Output>, future: F)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    set.spawn(future.in_current_span().with_current_subscriber());
}

/// [`tokio::task::spawn_blocking`], keeping the current subscriber and span.
pub fn spawn_blocking<F, R>(work: F) -> tokio::task::JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let dispatch = tracing::dispatcher::get_default(Clone::clone);
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || {
        tracing::dispatcher::with_default(&dispatch, || span.in_scope(work))
    })
}
