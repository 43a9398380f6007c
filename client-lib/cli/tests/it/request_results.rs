//! Results of requests on real programs built with `epcache cc`, through an embedded daemon, the
//! typed client and the `epcache` binary: a per-thread request gives one result per thread with
//! its thread id (issue 25 item 12), and a histogram with analyses keeps its buckets beside a
//! typed report (item 11).

use std::process::{Command, Output};

use epcache_client::{Aggregation, Analysis, Launch, LocalTarget, Request, RequestResult};

use crate::capture_support;

/// The `epcache` binary against the embedded daemon at `daemon`.
async fn epcache(daemon: &str, args: &[&str]) -> Output {
    let mut all: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    all.extend(["--daemon".to_owned(), daemon.to_owned()]);
    // The binary blocks; the embedded daemon needs this runtime's workers meanwhile.
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args(&all)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "epcache failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn by_id(results: &[RequestResult], id: u64) -> &RequestResult {
    results.iter().find(|r| r.request.id == id).unwrap()
}

/// Builds `tests/kernels/<source>` with `epcache cc -- gcc <flags>` into `dir/<output>`.
fn build(
    dir: &std::path::Path,
    who: &str,
    source: &str,
    flags: &[&str],
) -> Option<std::path::PathBuf> {
    if !capture_support::available("gcc", who) || !capture_support::runtime_built(who) {
        return None;
    }
    let source = capture_support::kernel(source);
    let output = source.file_stem().unwrap().to_str().unwrap().to_owned();
    let mut line = vec!["gcc"];
    line.extend(flags);
    line.extend([source.to_str().unwrap(), "-o", &output]);
    capture_support::epcache_cc(dir, &line);
    Some(dir.join(output))
}

/// Before, `--aggregation per-thread` gave one result summed over the threads (and its table
/// said `perthread`): now each thread has its row, with its OS thread id, and the rows add up to
/// the summed request's total; the command line prints a row and a chart per thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_thread_request_gives_one_result_per_thread() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = build(
        dir.path(),
        "request_results",
        "per_thread.c",
        &["-O0", "-g", "-pthread"],
    ) else {
        return;
    };
    let mut launch = Launch::new(&program, "per-thread-test");
    launch.show_output = false;
    let mut target = LocalTarget::launch(launch).await.unwrap();
    let pid = target.pid();
    let daemon = target.endpoint();
    let pid_text = pid.to_string();
    let placed: serde_json::Value = serde_json::from_str(&ok(&epcache(
        &daemon,
        &[
            "request",
            &pid_text,
            "--region",
            "touch",
            "--array",
            "data",
            "--event",
            "PAPI_L1_DCR",
            "--aggregation",
            "per-thread",
            "--json",
        ],
    )
    .await))
    .unwrap();
    assert_eq!(placed["aggregation"], "per-thread", "{placed}");
    let per_thread = placed["id"].as_u64().unwrap();
    let table = ok(&epcache(&daemon, &["describe", &pid_text]).await);
    assert!(table.contains("per-thread"), "{table}");
    let others = target
        .client()
        .requests(
            pid,
            &[
                Request::count("touch", "data", "PAPI_L1_DCR"),
                Request::histogram("touch", "data", "PAPI_L1_DCR", 4)
                    .aggregation(Aggregation::PerThread),
            ],
        )
        .await
        .unwrap();
    let (summed, histogram) = (others[0].id, others[1].id);
    assert!(target.run_to_end().await.unwrap().success());
    let results = target.client().results(pid, &[]).await.unwrap();

    let summed = by_id(&results, summed);
    assert_eq!((summed.total, summed.instances), (4000, 2));
    assert!(summed.threads.is_empty());
    let rows = &by_id(&results, per_thread).threads;
    assert_eq!(rows.len(), 2, "{rows:?}");
    let tids: Vec<u32> = rows
        .iter()
        .map(|r| r.thread_id.expect("a thread's row"))
        .collect();
    assert_ne!(tids[0], tids[1]);
    assert!(
        tids.iter().all(|&t| t != 0 && t != pid),
        "worker threads: {tids:?}"
    );
    let mut totals: Vec<u64> = rows.iter().map(|r| r.total).collect();
    totals.sort_unstable();
    assert_eq!(totals, [1000, 3000]);
    assert_eq!(totals.iter().sum::<u64>(), summed.total);
    assert!(rows.iter().all(|r| r.instances == 1 && r.threads == 1));
    // Each row also carries the runtime's number for its thread, as halts and the report's
    // per-thread rows give it: one each.
    let mut indexes: Vec<u32> = rows
        .iter()
        .map(|r| r.thread_index.expect("the runtime numbers its threads"))
        .collect();
    indexes.sort_unstable();
    assert!(indexes[0] < indexes[1], "{rows:?}");
    assert_eq!(by_id(&results, per_thread).total, summed.total);

    // 8,192 bytes a bucket: thread 0's 4,000 bytes in the first; thread 1's from byte 16,384 in
    // the third (2,048 elements) and the fourth (952).
    let hist = by_id(&results, histogram);
    let mut charts: Vec<Vec<u64>> = hist
        .threads
        .iter()
        .map(|t| t.buckets.iter().map(|b| b.count).collect())
        .collect();
    charts.sort();
    assert_eq!(charts, [vec![0, 0, 2048, 952], vec![1000, 0, 0, 0]]);
    assert_eq!(
        hist.buckets.iter().map(|b| b.count).collect::<Vec<_>>(),
        [1000, 0, 2048, 952]
    );

    let text = ok(&epcache(&daemon, &["results", &pid_text]).await);
    for row in rows {
        let (tid, index, total) = (row.thread_id.unwrap(), row.thread_index.unwrap(), row.total);
        assert!(
            text.lines()
                .any(|l| l.contains(&format!(" {index} (tid {tid})"))
                    && l.trim_end().ends_with(&total.to_string())),
            "no row for thread {index} (tid {tid}) with {total}:\n{text}"
        );
    }
    let chart = ok(&epcache(&daemon, &["histogram", &pid_text, &histogram.to_string()]).await);
    for tid in &tids {
        assert!(
            chart.contains(&format!("(tid {tid}): 1 instance(s)")),
            "{chart}"
        );
    }
    target.finish().await.unwrap();
}

/// Before, a histogram request with analyses came back with 0 buckets and total 0 (the report
/// was packed into the bucket words), the report a JSON string inside the message: now the
/// buckets sum to the total and to the static count of the same range and event, and the
/// report is typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_histogram_with_analyses_keeps_its_buckets_on_a_real_program() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = capture_support::build_gauss_regions(dir.path(), "request_results") else {
        return;
    };
    let mut launch = Launch::new(&program, "analysis-test").cache("D1=8K,2,32;LL=1M,8,64");
    launch.show_output = false;
    let mut target = LocalTarget::launch(launch).await.unwrap();
    let pid = target.pid();
    let placed = target
        .client()
        .requests(
            pid,
            &[
                Request::histogram("original", "A", "PAPI_L1_DCM", 25)
                    .analysis(Analysis::MissClasses)
                    .analysis(Analysis::Reuse),
                Request::count("original", "A", "PAPI_L1_DCM"),
            ],
        )
        .await
        .unwrap();
    assert!(target.run_to_end().await.unwrap().success());
    let results = target.client().results(pid, &[]).await.unwrap();
    let (h, s) = (by_id(&results, placed[0].id), by_id(&results, placed[1].id));
    assert!(h.available && s.available, "{results:?}");
    assert!(s.total > 40_000 / 32, "only {} misses", s.total);
    assert_eq!(h.buckets.len(), 25);
    assert_eq!(h.buckets.iter().map(|b| b.count).sum::<u64>(), h.total);
    assert_eq!(h.total, s.total);
    assert_eq!(h.analysis_missing, None);
    let report = h.analysis.as_ref().expect("a typed report");
    assert_eq!(report.level_name, "D1");
    let a = report.range("A").expect("A is analysed");
    let classes = a
        .miss_classes
        .as_ref()
        .expect("miss classes were asked for");
    assert_eq!(classes.total.total(), s.total, "{classes:?}");
    let reuse = a.reuse.as_ref().expect("reuse was asked for");
    assert!(
        reuse.residencies > 0 && reuse.spatial_use.is_some(),
        "{reuse:?}"
    );
    target.finish().await.unwrap();
}
