//! One step over loopback: a tool asks the daemon to resume a halted target, the target runs to
//! its next region boundary and halts, the daemon's watcher wakes on the halt futex, and the
//! tool gets the halt. Prints p50 and p99 (goal: p50 at most 200 us), beside a plain unary call
//! (the health check) measured in the same run on the same connection: the gRPC round trip alone.
//!
//! `cargo bench -p epcache-daemon --bench step` (EPCACHE_BENCH_STEPS sets the sample count).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use epcache_daemon::Config;
use epcache_proto::v1;
use epcache_proto::v1::mri_client::MriClient;
use epcache_test_support::synthetic;

const BENCH_TOKEN: &str = "bench-token-of-enough-characters";

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn summary(name: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let p50 = percentile(&samples, 0.50);
    println!(
        "{name:<28} n={:<6} min {:>7.1} us  p50 {:>7.1} us  p90 {:>7.1} us  p99 {:>7.1} us  max {:>8.1} us",
        samples.len(),
        us(samples[0]),
        us(p50),
        us(percentile(&samples, 0.90)),
        us(percentile(&samples, 0.99)),
        us(samples[samples.len() - 1]),
    );
    p50
}

fn main() {
    if std::env::var(synthetic::ROLE).as_deref() == Ok("target") {
        synthetic::run_target();
        return;
    }
    let steps: usize = std::env::var("EPCACHE_BENCH_STEPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        // Loopback TCP, which needs a token, as a remote tool would connect.
        let daemon = epcache_daemon::serve(Config {
            listen: "127.0.0.1:0".parse().unwrap(),
            token: Some(BENCH_TOKEN.into()),
            discovery_interval: Duration::from_millis(20),
            ..Config::private(dir.path())
        })
        .await
        .unwrap();
        // The target: empty regions forever, waiting for the tool at start.
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(synthetic::ROLE, "target")
            .env(synthetic::ITERATIONS, "0")
            .env(synthetic::WORK, "none")
            .env("EPCACHE_WAIT", "60")
            .env("EPCACHE_RUNTIME_DIR", dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert!(lines.any(|l| l.unwrap().contains("SYNTHETIC READY")));
        let channel = tonic::transport::Channel::from_shared(daemon.endpoint())
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
        let mut client = MriClient::with_interceptor(channel, |mut r: tonic::Request<()>| {
            r.metadata_mut().insert(
                "authorization",
                format!("Bearer {BENCH_TOKEN}").parse().unwrap(),
            );
            Ok(r)
        });
        let started = Instant::now();
        while !client
            .list_targets(v1::ListTargetsRequest {})
            .await
            .unwrap()
            .into_inner()
            .targets
            .iter()
            .any(|t| t.pid == pid)
        {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "target not discovered"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let step = v1::StepRequest {
            pid,
            until: None,
            count: 1,
            timeout_ms: 10_000,
        };
        let mut unary = Vec::with_capacity(steps);
        let mut stepped = Vec::with_capacity(steps);
        for i in 0..steps + steps / 10 {
            let t = Instant::now();
            health
                .check(tonic_health::pb::HealthCheckRequest {
                    service: String::new(),
                })
                .await
                .unwrap();
            let u = t.elapsed();
            let t = Instant::now();
            let reply = client.step(step.clone()).await.unwrap().into_inner();
            let s = t.elapsed();
            assert!(
                matches!(reply.outcome, Some(v1::step_response::Outcome::Halted(_))),
                "{reply:?}"
            );
            // The first tenth warms the connection, the caches and the branch predictors.
            if i >= steps / 10 {
                unary.push(u);
                stepped.push(s);
            }
        }
        println!("one step over loopback (resume, halt at the next boundary, halt delivered):");
        let u = summary("unary health check", unary);
        let s = summary("Step to the next boundary", stepped);
        println!(
            "step p50 / unary p50 = {:.2}; goal: step p50 <= 200 us ({})",
            s.as_secs_f64() / u.as_secs_f64(),
            if s <= Duration::from_micros(200) {
                "met"
            } else {
                "NOT met"
            }
        );
        let _ = child.kill();
        let _ = child.wait();
        daemon.shutdown().await;
    });
}
