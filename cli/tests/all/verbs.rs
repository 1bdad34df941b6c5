//! The `pando-host` binary, run as an operator runs it, against the test
//! adapter component (see `tests/components/test-adapter/src/lib.rs` for
//! what it answers). Each test has a compile cache of its own. The
//! metrics and the log lines are `metrics.rs`'s.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Output, Stdio};

use pando_host::types::{BundlePlan, EgressPolicy, EgressRule, Protocol};

use crate::common::{
    Cli, assert_exit, interrupt, limits_file, repo_root, stderr, stdout, test_adapter,
};

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {}", stdout(o)))
}

/// The JSON error document `-o json` writes on stderr (its last line; log
/// lines may come before it), with stdout left empty.
fn json_error(o: &Output) -> serde_json::Value {
    assert!(
        o.stdout.is_empty(),
        "an error writes nothing on stdout: {}",
        stdout(o)
    );
    let err = stderr(o);
    let line = err.lines().last().unwrap_or("");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("stderr ends in no JSON ({e}): {err}"))
}

#[test]
fn inspect_json_names_the_kind_and_world() {
    let cli = Cli::new();
    let adapter = test_adapter();
    let adapter = adapter.to_str().expect("a UTF-8 path");
    let o = cli.run(&["inspect", adapter, "-o", "json"]);
    assert_exit(&o, 0);
    let v = json(&o);
    assert_eq!(v["kind"], "test");
    assert_eq!(v["world"], "runtime-adapter");
    assert_eq!(v["version"], "0.1.0");
    for key in [
        "category",
        "description",
        "imports",
        "exports",
        "digest",
        "cache",
    ] {
        assert!(v.get(key).is_some(), "no `{key}` in {v}");
    }
    assert!(v["config_schema"].is_object(), "schema not parsed: {v}");
    assert_eq!(v["cache"], "compiled", "a fresh cache dir compiles");

    // Text: aligned `key: value` lines; the second time from the cache.
    let o = cli.run(&["inspect", adapter]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(text.contains("kind:          test\n"), "{text}");
    assert!(text.contains("world:         runtime-adapter\n"), "{text}");
    assert!(
        text.contains("exports:\n  pando:runtime/adapter@0.1.0\n"),
        "{text}"
    );
    assert!(text.contains("cache:         hit\n"), "{text}");
}

#[test]
fn a_0_2_adapter_is_inspected_and_called_as_a_0_1_one_is_its_streams_included() {
    let cli = Cli::new();
    let v02 = repo_root().join("target/wasm32-wasip2/release/pando_v02_adapter.wasm");
    assert!(
        v02.is_file(),
        "{} is missing: build the test components with `scripts/build-components`",
        v02.display()
    );
    let v02 = v02.to_str().expect("a UTF-8 path");
    let o = cli.run(&["inspect", v02, "-o", "json"]);
    assert_exit(&o, 0);
    let v = json(&o);
    assert_eq!(v["kind"], "v02-test");
    assert_eq!(v["version"], "0.2.0");
    assert_eq!(v["world"], "runtime-adapter");

    let o = cli.run(&["--adapter", v02, "upstream", "shop", "web", "8080"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "web.shop.v02:8080\n");

    // A stream the adapter writes after its call returned.
    let o = cli.run(&["--adapter", v02, "logs", "shop", "lines-3"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "line 1\nline 2\nline 3\n");
    // A command's failure through the stream's `done`: its exit code.
    let o = cli.run(&["--adapter", v02, "run", "shop", "exit-4", "--", "false"]);
    assert_eq!(stdout(&o), "out");
    assert_exit(&o, 4);
}

#[test]
fn inspect_of_a_file_that_is_not_wasm_names_it() {
    let cli = Cli::new();
    let dir = tempfile::tempdir().expect("a temporary dir");
    let file = dir.path().join("not-an-adapter.wasm");
    std::fs::write(&file, "this is text\n").expect("writing the file");
    let o = cli.run(&["inspect", file.to_str().expect("a UTF-8 path")]);
    assert!(
        matches!(o.status.code(), Some(1 | 2)),
        "exit {:?}: {}",
        o.status,
        stderr(&o)
    );
    let err = stderr(&o);
    assert!(err.contains("not-an-adapter.wasm"), "{err}");
    assert!(err.contains("not a WebAssembly component"), "{err}");
}

#[test]
fn upstream_prints_host_and_port() {
    let cli = Cli::new();
    let o = cli.run(&["upstream", "shop", "web", "8080"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "web.shop.test:8080\n");

    let o = cli.run(&["upstream", "shop", "web", "8080", "-o", "json"]);
    assert_exit(&o, 0);
    assert_eq!(
        json(&o),
        serde_json::json!({"host": "web.shop.test", "port": 8080})
    );
}

#[test]
fn the_hello_example_parses_into_a_bundle_plan() {
    let path = repo_root().join("examples/hello.yaml");
    let text = std::fs::read_to_string(&path).expect("examples/hello.yaml exists");
    let plan: BundlePlan = pando_host::yaml::from_str(&text).expect("hello.yaml is a BundlePlan");
    assert_eq!(plan.id, "hello");
    assert_eq!(plan.revision, "1");
    assert_eq!(plan.workloads.len(), 2);
    let web = &plan.workloads[0];
    assert_eq!(
        (web.name.as_str(), web.image.as_str()),
        ("web", "pando.test/server:1")
    );
    assert_eq!(web.ports[0].port, 8080);
    assert_eq!(web.ports[0].protocol, Protocol::Tcp);
    assert!(!web.env.is_empty());
    assert_eq!(web.resources.requests.cpu_millis, 100);
    assert_eq!(web.resources.requests.memory_bytes, 64 << 20);
    let worker = &plan.workloads[1];
    assert_eq!(worker.image, "pando.test/busybox:1");
    assert_eq!(worker.command[..2], ["sh", "-c"]);
    assert!(
        worker.command[2].contains("tee -a /data/ticks"),
        "the folded script is one argument: {:?}",
        worker.command
    );
    assert_eq!(worker.mounts[0].volume, "data");
    assert_eq!(worker.mounts[0].path, "/data");
    assert_eq!(plan.volumes[0].name, "data");
    assert_eq!(plan.volumes[0].size_bytes, Some(1 << 30));
    assert_eq!(
        plan.network.egress,
        EgressPolicy::Restricted(vec![EgressRule {
            destination: "allowed.outside.test".into(),
            ports: vec![80],
        }])
    );
    assert!(plan.pull_credentials.is_empty());
}

#[test]
fn apply_of_the_hello_example_succeeds() {
    let cli = Cli::new();
    let plan = repo_root().join("examples/hello.yaml");
    let o = cli.run(&["apply", plan.to_str().expect("a UTF-8 path"), "-o", "json"]);
    assert_exit(&o, 0);
    assert_eq!(
        json(&o),
        serde_json::json!({"id": "hello", "location": "test/hello"})
    );
}

/// A plan written as a kubectl user writes one: lists left out, `TCP`,
/// `egress: open`, keys as the WIT spells them.
#[test]
fn apply_of_a_short_plan_fills_in_what_it_leaves_out() {
    let cli = Cli::new();
    let dir = tempfile::tempdir().expect("a temporary dir");
    let file = dir.path().join("short.yaml");
    std::fs::write(
        &file,
        "id: short\nrevision: '1'\nnetwork: {egress: open}\nworkloads:\n- name: web\n  \
         image: nginx:1.27\n  ports: [{port: 80, protocol: TCP}]\n  \
         resources: {requests: {cpu-millis: 100, memory-bytes: 67108864}}\n",
    )
    .expect("writing the plan");
    let o = cli.run(&["apply", file.to_str().expect("a UTF-8 path"), "-o", "json"]);
    assert_exit(&o, 0);
    assert_eq!(
        json(&o),
        serde_json::json!({"id": "short", "location": "test/short"})
    );
    // What has no safe default is still asked for, by name.
    std::fs::write(&file, "id: short\nrevision: '1'\n").expect("writing the plan");
    let o = cli.run(&["apply", file.to_str().expect("a UTF-8 path")]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("missing field `network`"),
        "{}",
        stderr(&o)
    );
}

/// examples/hello.yaml with its port's `protocol: Tcp` line replaced by
/// `line`, in a file of a temporary directory (kept alive by the first).
fn hello_with(line: &str) -> (tempfile::TempDir, PathBuf) {
    let text = std::fs::read_to_string(repo_root().join("examples/hello.yaml"))
        .expect("examples/hello.yaml exists");
    let bad = text.replacen("protocol: Tcp", line, 1);
    assert_ne!(bad, text, "the example has a Tcp port");
    let dir = tempfile::tempdir().expect("a temporary dir");
    let file = dir.path().join("plan.yaml");
    std::fs::write(&file, bad).expect("writing the plan");
    (dir, file)
}

#[test]
fn apply_of_a_plan_with_a_bad_field_names_the_file_and_field() {
    let cli = Cli::new();
    let (_dir, file) = hello_with("protocol: tc");

    let o = cli.run(&["apply", file.to_str().expect("a UTF-8 path")]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "{}: at workloads[0].ports[0].protocol: unknown variant `tc`, expected `Tcp` or `Udp`",
            file.display()
        )),
        "{err}"
    );

    // With -o json the error is a JSON object on stderr; stdout stays empty.
    let o = cli.run(&["apply", file.to_str().expect("a UTF-8 path"), "-o", "json"]);
    assert_exit(&o, 2);
    let v = json_error(&o);
    assert_eq!(v["error"]["kind"], "input");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("workloads[0].ports[0].protocol"), "{v}");
}

#[test]
fn apply_of_a_plan_with_a_field_its_type_lacks_names_it_and_sends_nothing() {
    let cli = Cli::new();
    // A typo of `protocol`: the generated types would skip it, and the port
    // would be TCP.
    let (_dir, file) = hello_with("prot: Udp");

    let o = cli.run(&["apply", file.to_str().expect("a UTF-8 path")]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "{}: at workloads[0].ports[0].prot: unknown field; the fields here are ",
            file.display()
        )) && err.contains("protocol"),
        "{err}"
    );
    assert_eq!(stdout(&o), "", "nothing was applied");
}

#[test]
fn observe_json_reports_the_counter_workload() {
    let cli = Cli::new();
    let o = cli.run(&["observe", "shop", "-o", "json"]);
    assert_exit(&o, 0);
    let v = json(&o);
    assert_eq!(v["id"], "shop");
    assert_eq!(v["exists"], true);
    assert_eq!(v["workloads"][0]["name"], "counter");
    assert_eq!(v["workloads"][0]["phase"], "Running");

    let o = cli.run(&["observe", "shop"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(text.contains("NAME     PHASE    EXIT  REASON\n"), "{text}");
    assert!(text.contains("counter  Running  -     calls=1\n"), "{text}");
}

#[test]
fn logs_of_bytes_1000_prints_exactly_1000_bytes() {
    let cli = Cli::new();
    let o = cli.run(&["logs", "shop", "bytes-1000"]);
    assert_exit(&o, 0);
    assert_eq!(o.stdout.len(), 1000);
    assert!(
        o.stdout
            .iter()
            .enumerate()
            .all(|(i, b)| usize::from(*b) == i % 251),
        "the bytes are the adapter's pattern"
    );
}

#[test]
fn a_call_error_exits_1_and_is_json_on_stderr_with_o_json() {
    let cli = Cli::new();
    // More than the test adapter's 16 MiB: `invalid`.
    let o = cli.run(&["logs", "shop", "bytes-99999999999", "-o", "json"]);
    assert_exit(&o, 1);
    let v = json_error(&o);
    assert_eq!(v["error"]["kind"], "invalid", "{v}");
    assert!(v["error"]["message"].is_string(), "{v}");

    let o = cli.run(&["logs", "shop", "bytes-99999999999"]);
    assert_exit(&o, 1);
    assert!(stderr(&o).starts_with("error: "), "{}", stderr(&o));
}

#[test]
fn run_fail_exits_3_with_its_stderr() {
    let cli = Cli::new();
    let o = cli.run(&["run", "shop", "web", "--", "fail", "now"]);
    assert_exit(&o, 3);
    assert!(stderr(&o).contains("failing as asked"), "{}", stderr(&o));

    let o = cli.run(&["run", "shop", "web", "--", "echo", "hi"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "echo hi\n");
}

#[test]
fn exec_copies_stdin_and_exits_with_the_process_code() {
    let cli = Cli::new();
    let o = cli.run_with_stdin(&["exec", "-i", "shop", "web", "--", "upper"], b"hello\n");
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "HELLO\n");

    let o = cli.run_with_stdin(&["exec", "-i", "shop", "web", "--", "exit7"], b"x");
    assert_exit(&o, 7);
    assert_eq!(stdout(&o), "x");
}

#[test]
fn volume_snapshot_restores_round_trip() {
    let cli = Cli::new();
    let dir = tempfile::tempdir().expect("a temporary dir");
    let file = dir.path().join("snap.tar");
    let file = file.to_str().expect("a UTF-8 path");
    let o = cli.run(&["volume", "snapshot", "shop", "bytes-5000", "-f", file]);
    assert_exit(&o, 0);
    assert_eq!(std::fs::metadata(file).expect("the snapshot").len(), 5000);
    let o = cli.run(&["volume", "restore", "shop", "bytes-5000", "-f", file]);
    assert_exit(&o, 0);
    // The adapter checks what it is given: other bytes are refused.
    let o = cli.run(&["volume", "restore", "shop", "bytes-6000", "-f", file]);
    assert_exit(&o, 1);
    // To stdout by default.
    let o = cli.run(&["volume", "snapshot", "shop", "v"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "snapshot of shop/v\n");
}

#[test]
fn watch_prints_json_lines_until_interrupted() {
    let cli = Cli::new();
    let mut child = cli
        .command(&["watch", "-o", "json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pando-host starts");
    let out = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(out).lines();
    let first = lines.next().expect("a first event").expect("a line");
    assert_eq!(first, "\"Watching\"");
    let second = lines.next().expect("a second event").expect("a line");
    let v: serde_json::Value = serde_json::from_str(&second).expect("a JSON line");
    assert_eq!(v["Changed"]["bundle"], "b", "{second}");
    // Ctrl-C cancels the call; the watch ends cleanly.
    interrupt(&child);
    drop(lines);
    let status = child.wait().expect("pando-host ends");
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn capacity_text_shows_totals_and_the_largest_fit() {
    let cli = Cli::new();
    let o = cli.run(&["capacity"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(
        text.contains("total:       4000m CPU, 8.0 GiB memory\n"),
        "{text}"
    );
    assert!(text.contains("largest fit: local"), "{text}");
}

/// `run` has no deadline of its own: a command runs to its end (a
/// `pg_dump` outlasts the default 60 s), and Ctrl-C ends it. Shown with a
/// default timeout of 300 ms, which an ordinary call would be held to.
#[test]
fn run_outlasts_the_default_deadline_and_ends_on_interrupt() {
    let cli = Cli::new();
    let (_dir, file) = limits_file("default_timeout: 300\n");
    let path = file.to_str().expect("a UTF-8 path");
    // Compiled into the cache first, so the wait below is the call's, not
    // the compile's.
    assert_exit(&cli.run(&["--limits", path, "health"]), 0);
    let mut child = cli
        .command(&["--limits", path, "run", "shop", "web", "--", "hang"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pando-host starts");
    std::thread::sleep(std::time::Duration::from_millis(2_000));
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "`run` was still running past the 300 ms default deadline"
    );
    interrupt(&child);
    let out = child.wait_with_output().expect("pando-host ends");
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));

    // With `--timeout`, its deadline is that.
    let o = cli.run(&[
        "--limits",
        path,
        "--timeout",
        "500ms",
        "run",
        "shop",
        "web",
        "--",
        "hang",
    ]);
    assert_exit(&o, 1);
    assert!(stderr(&o).contains("deadline"), "{}", stderr(&o));
}
