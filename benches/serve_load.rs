//! What's measured: `switchyard serve` under load. The server runs in this process on
//! loopback (2 async workers); clients are keep-alive HTTP/1.1 connections on the same cores.
//! For `/v1/route` and `/v1/assemble`, at 1, 8 and 64 concurrent clients: throughput,
//! p50/p95/p99 and errors, beside the same calls made in-process (what the server adds). Every
//! request embeds its task (the task cache is off: agents rarely send the same task twice).
//! Then a soak: many `/v1/route` requests, with the resident memory after the first tenth and
//! at the end (it must stay flat).
//!
//! Run with: `cargo bench --bench serve_load -- [--seconds 5] [--soak 100000] [--model minilm]`

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use switchyard_embed::Embedder;
use switchyard_serve::{AppState, ModelLoader, ServeConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Args {
    seconds: f64,
    soak: usize,
    model: String,
}

fn args() -> Args {
    let mut a = Args { seconds: 5.0, soak: 100_000, model: "minilm".into() };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--seconds" => a.seconds = value().parse().expect("--seconds: a number"),
            "--soak" => a.soak = value().parse().expect("--soak: a count"),
            "--model" => a.model = value(),
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

fn tasks() -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/cases.jsonl");
    std::fs::read_to_string(path)
        .expect("manifests/cases.jsonl")
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["task"].as_str().map(str::to_string))
        .collect()
}

#[derive(Default)]
struct Stats {
    latencies_ms: Vec<f64>,
    errors: u64,
    wall_s: f64,
}

impl Stats {
    fn pct(&mut self, q: f64) -> f64 {
        self.latencies_ms.sort_by(f64::total_cmp);
        let n = self.latencies_ms.len();
        if n == 0 {
            return f64::NAN;
        }
        self.latencies_ms[((n - 1) as f64 * q).round() as usize]
    }
}

/// One keep-alive connection sending `count` requests (or until `until`), round-robin over
/// `bodies` starting at `offset`.
async fn client(
    addr: SocketAddr,
    path: &'static str,
    bodies: Arc<Vec<String>>,
    offset: usize,
    until: Instant,
    count: usize,
) -> Stats {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let mut stats = Stats::default();
    let mut buf = Vec::with_capacity(1 << 16);
    let mut chunk = vec![0u8; 1 << 16];
    let mut i = offset;
    while stats.latencies_ms.len() + (stats.errors as usize) < count && Instant::now() < until {
        let body = &bodies[i % bodies.len()];
        i += 1;
        let request = format!(
            "POST {path} HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        let t = Instant::now();
        stream.write_all(request.as_bytes()).await.expect("write");
        buf.clear();
        let (status, header_end, length) = loop {
            let n = stream.read(&mut chunk).await.expect("read");
            assert!(n > 0, "the server closed the connection");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let status: u16 = head[9..12].parse().expect("status");
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .expect("content-length");
                break (status, end + 4, length);
            }
        };
        while buf.len() < header_end + length {
            let n = stream.read(&mut chunk).await.expect("read");
            assert!(n > 0, "the server closed the connection mid-body");
            buf.extend_from_slice(&chunk[..n]);
        }
        if status == 200 {
            stats.latencies_ms.push(t.elapsed().as_secs_f64() * 1e3);
        } else {
            stats.errors += 1;
        }
    }
    stats
}

async fn load(
    addr: SocketAddr,
    path: &'static str,
    bodies: &Arc<Vec<String>>,
    clients: usize,
    seconds: f64,
    count: usize,
) -> Stats {
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(seconds);
    let per_client = count.div_ceil(clients);
    let handles: Vec<_> = (0..clients)
        .map(|c| tokio::spawn(client(addr, path, Arc::clone(bodies), c * 7, until, per_client)))
        .collect();
    let mut all = Stats::default();
    for h in handles {
        let s = h.await.expect("client");
        all.latencies_ms.extend(s.latencies_ms);
        all.errors += s.errors;
    }
    all.wall_s = started.elapsed().as_secs_f64();
    all
}

fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn main() {
    let a = args();
    let model: Arc<dyn Embedder> = match switchyard_embed::load(&a.model) {
        Ok(m) => Arc::new(m),
        Err(e) => {
            eprintln!("skipping: {e} (run `python3 models/provision.py`)");
            return;
        }
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let index = common::default_index(model.as_ref(), dir.path(), &a.model);
    let tasks = tasks();
    let mut config = ServeConfig::new(&index);
    config.root = Some(std::path::PathBuf::from("/"));
    config.reload_every = None;
    config.assembler.router().cache_size(0);
    let loader: ModelLoader = {
        let model = Arc::clone(&model);
        Arc::new(move |_: &str| Ok(Arc::clone(&model)))
    };
    let state = AppState::open(config, loader).expect("server state");

    // In-process: the same calls, one after another, on the same engine.
    let engine = state.engine();
    let options = switchyard::AssembleOptions {
        root: Some(std::path::PathBuf::from("/")),
        ..Default::default()
    };
    let mut in_process = [Stats::default(), Stats::default()];
    let until = Instant::now() + Duration::from_secs_f64(a.seconds);
    for (i, task) in tasks.iter().cycle().enumerate() {
        if Instant::now() >= until {
            break;
        }
        let t = Instant::now();
        if i % 2 == 0 {
            engine.assembler.router().route(task, &Default::default()).expect("route");
            in_process[0].latencies_ms.push(t.elapsed().as_secs_f64() * 1e3);
        } else {
            engine.assembler.assemble(task, &options).expect("assemble");
            in_process[1].latencies_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    drop(engine);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(switchyard_serve::serve(listener, state, async {
            let _ = stopped.await;
        }));
        let bodies: Arc<Vec<String>> =
            Arc::new(tasks.iter().map(|t| serde_json::json!({ "task": t }).to_string()).collect());
        println!(
            "model {}, {} tasks of manifests/cases.jsonl, task cache off, {} s per row, {} cores",
            a.model,
            tasks.len(),
            a.seconds,
            std::thread::available_parallelism().map_or(0, |n| n.get())
        );
        println!();
        println!("| endpoint | clients | requests/s | p50 ms | p95 ms | p99 ms | errors |");
        println!("|---|---|---|---|---|---|---|");
        for (slot, path) in [(0, "/v1/route"), (1, "/v1/assemble")] {
            let s = &mut in_process[slot];
            println!(
                "| {path} in-process | 1 | {:.0} | {:.2} | {:.2} | {:.2} | 0 |",
                s.latencies_ms.len() as f64 / s.latencies_ms.iter().sum::<f64>() * 1e3,
                s.pct(0.5),
                s.pct(0.95),
                s.pct(0.99)
            );
            for clients in [1, 8, 64] {
                let mut s = load(addr, path, &bodies, clients, a.seconds, usize::MAX).await;
                println!(
                    "| {path} | {clients} | {:.0} | {:.2} | {:.2} | {:.2} | {} |",
                    s.latencies_ms.len() as f64 / s.wall_s,
                    s.pct(0.5),
                    s.pct(0.95),
                    s.pct(0.99),
                    s.errors
                );
            }
        }
        if a.soak > 0 {
            let warm = a.soak / 10;
            let mut first = load(addr, "/v1/route", &bodies, 8, 86_400.0, warm).await;
            let rss_warm = rss_mib();
            let mut rest = load(addr, "/v1/route", &bodies, 8, 86_400.0, a.soak - warm).await;
            let rss_end = rss_mib();
            println!();
            println!(
                "soak: {} /v1/route requests by 8 clients in {:.0} s, {} errors; p99 {:.2} ms then {:.2} ms; resident memory {rss_warm:.1} MiB after {warm}, {rss_end:.1} MiB at the end ({:+.1} MiB)",
                first.latencies_ms.len() + rest.latencies_ms.len(),
                first.wall_s + rest.wall_s,
                first.errors + rest.errors,
                first.pct(0.99),
                rest.pct(0.99),
                rss_end - rss_warm
            );
        }
        stop.send(()).expect("stop");
        server.await.expect("server task").expect("server");
    });
}
