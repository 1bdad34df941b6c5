//! The network the host lends: `wasi:sockets` without authority. An adapter
//! built on a runtime that imports sockets loads, and every attempt to use
//! them is refused: no connection leaves the sandbox and no name resolves.

use std::time::Duration;

use pando_host::{CallContext, Limits};
use pando_tests::plans::plan;
use pando_tests::test_adapter;

#[tokio::test]
async fn sockets_are_lent_without_a_network() {
    // A listener the adapter is told to reach: it must see nothing.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let addr = listener.local_addr().expect("addr");

    // Loading at all shows an adapter importing wasi:sockets is accepted.
    let (adapter, _cache) = test_adapter::load(Limits::default()).await;
    assert!(
        adapter
            .shape()
            .imports
            .iter()
            .any(|i| i.starts_with("wasi:sockets/")),
        "the test adapter imports sockets: {:?}",
        adapter.shape().imports
    );
    let ctx = CallContext::default().with_timeout(Duration::from_secs(20));
    let handle = adapter
        .apply(&ctx, &plan(&format!("connect-{addr}"), &[]))
        .await
        .expect("the call itself succeeds");
    assert!(
        handle.location.starts_with("refused: ") && handle.location.contains("not resolved"),
        "no connection, no name: {}",
        handle.location
    );
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "nothing reached the listener"
    );
}
