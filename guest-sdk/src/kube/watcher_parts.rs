//! What a watcher reports and how it waits after a failure: the parts of
//! [`super::watcher`] that do no waiting of their own, the same file in both
//! SDK lines.

use std::time::Duration;

use super::KubeError;

/// What a [`Watcher`](super::Watcher) reports, as kube-runtime's `watcher::Event`.
///
/// A list (the first, and every one after a 410) arrives as [`Init`](Event::Init),
/// one [`InitApply`](Event::InitApply) per object, then
/// [`InitDone`](Event::InitDone): at `InitDone` the objects of the list are
/// the whole collection, and what was known before and not in it is gone.
#[derive(Clone, Debug, PartialEq)]
pub enum Event<K> {
    /// An object was added or changed.
    Apply(K),
    /// An object was deleted; its last state.
    Delete(K),
    /// A list begins.
    Init,
    /// One object of the list.
    InitApply(K),
    /// The list is complete; changes follow.
    InitDone,
}

/// How long a [`Watcher`](super::Watcher) waits after a failure: `initial`, doubling up to
/// `max`, back to `initial` once an event arrives; a server's
/// `retry-after` is waited for when it is longer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// The first wait.
    pub initial: Duration,
    /// The longest wait.
    pub max: Duration,
    next: Duration,
}

impl Default for Backoff {
    /// 500 ms, doubling up to 30 s.
    fn default() -> Self {
        Backoff::new(Duration::from_millis(500), Duration::from_secs(30))
    }
}

impl Backoff {
    /// Waits from `initial` doubling up to `max`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Backoff {
            initial,
            max,
            next: initial,
        }
    }

    /// The wait after one more failure (the server's `retry-after`, when
    /// longer).
    pub fn next_delay(&mut self, retry_after: Option<Duration>) -> Duration {
        let delay = self.next.min(self.max);
        self.next = (delay * 2).min(self.max);
        delay.max(retry_after.unwrap_or_default())
    }

    /// Back to the first wait.
    pub fn reset(&mut self) {
        self.next = self.initial;
    }
}

/// Whether a failure may pass by itself: the API server unreachable, or
/// answering 429 or 5xx. Refusals of the host's, a 4xx, an answer that
/// does not decode, and the call's own end do not.
pub fn is_transient(e: &KubeError) -> bool {
    match e {
        KubeError::Transport(_) => true,
        KubeError::Api { status, .. } => *status == 429 || *status >= 500,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_to_its_cap_and_starts_over() {
        let mut b = Backoff::new(Duration::from_millis(500), Duration::from_secs(3));
        let waits: Vec<_> = (0..5).map(|_| b.next_delay(None)).collect();
        assert_eq!(
            waits,
            [500, 1000, 2000, 3000, 3000].map(Duration::from_millis)
        );
        b.reset();
        assert_eq!(b.next_delay(None), Duration::from_millis(500));
        assert_eq!(
            b.next_delay(Some(Duration::from_secs(10))),
            Duration::from_secs(10),
            "a longer retry-after wins"
        );
        assert_eq!(
            Backoff::default().next_delay(None),
            Duration::from_millis(500)
        );
    }

    #[test]
    fn only_what_may_pass_is_retried() {
        let api = |status| KubeError::Api {
            status,
            reason: String::new(),
            message: String::new(),
            retry_after: None,
        };
        assert!(is_transient(&KubeError::Transport("reset".into())));
        assert!(is_transient(&api(429)) && is_transient(&api(503)));
        for e in [
            api(403),
            api(404),
            api(410),
            KubeError::Timeout,
            KubeError::Cancelled,
            KubeError::Decode("x".into()),
            KubeError::InvalidRequest("x".into()),
        ] {
            assert!(!is_transient(&e), "{e:?}");
        }
    }
}
