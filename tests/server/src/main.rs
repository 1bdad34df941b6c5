//! `pando-test-server`: see the library's doc for the flags and the requests it serves.

use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;

use pando_test_server::{Identity, serve};

const USAGE: &str = "usage: pando-test-server --listen PORT|ADDRESS:PORT [--listen ...]\n       \
                     pando-test-server [--print LINE] [--exit N]";

enum Mode {
    Serve(Vec<SocketAddr>),
    Print(Option<String>, i32),
}

fn parse(args: &[String]) -> Result<Mode, String> {
    let mut listen = Vec::new();
    let (mut print, mut exit) = (None, None);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--listen" => {
                let v = value()?;
                let addr = if v.bytes().all(|b| b.is_ascii_digit()) {
                    format!("0.0.0.0:{v}")
                } else {
                    v.clone()
                };
                listen.push(
                    addr.parse()
                        .map_err(|_| format!("--listen `{v}` is neither PORT nor ADDRESS:PORT"))?,
                );
            }
            "--print" => print = Some(value()?.clone()),
            "--exit" => {
                let v = value()?;
                exit = Some(
                    v.parse()
                        .map_err(|_| format!("--exit `{v}` is not a number"))?,
                );
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    match (listen.is_empty(), print.is_some() || exit.is_some()) {
        (false, true) => Err("--listen serves; --print and --exit exit at once: not both".into()),
        (true, false) => Err("nothing to do".into()),
        (false, false) => Ok(Mode::Serve(listen)),
        (true, true) => Ok(Mode::Print(print, exit.unwrap_or(0))),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = match parse(&args) {
        Ok(m) => m,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("pando-test-server: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let addrs = match mode {
        Mode::Print(line, code) => {
            if let Some(line) = line {
                println!("{line}");
            }
            // Any code the shell can report, negative ones included, as the kernel would.
            std::process::exit(code);
        }
        Mode::Serve(addrs) => addrs,
    };
    let identity = Identity::current();
    let mut threads = Vec::new();
    for addr in addrs {
        let listener = match TcpListener::bind(addr) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("pando-test-server: listening on {addr}: {e}");
                return ExitCode::FAILURE;
            }
        };
        match listener.local_addr() {
            Ok(a) => eprintln!("listening on {a}"),
            Err(e) => eprintln!("pando-test-server: {e}"),
        }
        let identity = identity.clone();
        threads.push(std::thread::spawn(move || serve(listener, identity)));
    }
    for t in threads {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                eprintln!("pando-test-server: {e}");
                return ExitCode::FAILURE;
            }
            Err(_) => return ExitCode::FAILURE,
        }
    }
    ExitCode::SUCCESS
}
