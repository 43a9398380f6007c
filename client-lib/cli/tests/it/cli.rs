//! The `epcache` binary's surface without Valgrind: help, version, errors, conversion and stdin.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use std::io::Write;

const LACKEY_LOG: &str = concat!(
    "==1== Lackey, an example Valgrind tool\n",
    "I  00400000,4\n",
    " L 00601000,8\n",
    "I  00400004,3\n",
    " S 00601040,4\n",
    " M 00601000,8\n",
    "I  00400007,5\n",
    " L 00601fe0,64\n",
    "==1== done\n",
);

fn epcache(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(args)
        .output()
        .expect("running epcache")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn write_log(dir: &Path) -> String {
    let path = dir.join("small.lackey");
    std::fs::write(&path, LACKEY_LOG).unwrap();
    path.display().to_string()
}

#[test]
fn version_and_help_describe_the_commands() {
    let version = epcache(&["--version"]);
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("epcache "));
    let help = String::from_utf8_lossy(&epcache(&["replay", "--help"]).stdout).into_owned();
    for flag in [
        "--format",
        "--cache",
        "--I1",
        "--D1",
        "--LL",
        "--cachegrind-compat",
        "--json",
        "<TRACE>",
    ] {
        assert!(help.contains(flag), "replay --help lacks {flag}");
    }
    let help =
        String::from_utf8_lossy(&epcache(&["trace", "convert", "--help"]).stdout).into_owned();
    assert!(
        help.contains("--from") && help.contains("<OUTPUT>"),
        "{help}"
    );
}

#[test]
fn lackey_and_epct_replays_agree_and_show_the_conventions() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path());
    let epct = dir.path().join("small.epct").display().to_string();
    let convert = epcache(&["trace", "convert", "--from", "lackey", &log, &epct]);
    assert!(convert.status.success(), "{}", stderr(&convert));
    assert!(String::from_utf8_lossy(&convert.stdout).contains("converted 7 records"));
    let shape = ["--I1=1024,2,32", "--D1=1024,2,32", "--LL=8192,4,64"];
    let mut results = Vec::new();
    for trace in [&log, &epct] {
        let mut args = vec!["replay", "--cachegrind-compat", "--json"];
        args.extend(shape);
        args.push(trace);
        let out = epcache(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        results.push(json["cachegrind"].clone());
        assert_eq!(json["records"]["modifies"], 1);
        assert_eq!(
            json["records"]["clamped"], 1,
            "the 64-byte load is clamped to the 32-byte lines: {json}"
        );
    }
    assert_eq!(results[0], results[1]);
    // A file with no lackey record is refused and leaves no output behind.
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "hello\n").unwrap();
    let empty = dir.path().join("empty.epct");
    let convert = epcache(&[
        "trace",
        "convert",
        "--from",
        "lackey",
        &text.display().to_string(),
        &empty.display().to_string(),
    ]);
    assert_eq!(convert.status.code(), Some(1));
    assert!(stderr(&convert).contains("holds no lackey records"));
    assert!(!empty.exists());
    // A failed conversion leaves an existing output as it was, and an output that is the
    // input itself is refused before anything is touched.
    let before = std::fs::read(&epct).unwrap();
    let convert = epcache(&[
        "trace",
        "convert",
        "--from",
        "lackey",
        &text.display().to_string(),
        &epct,
    ]);
    assert_eq!(convert.status.code(), Some(1));
    assert_eq!(std::fs::read(&epct).unwrap(), before);
    let convert = epcache(&["trace", "convert", "--from", "lackey", &log, &log]);
    assert_eq!(convert.status.code(), Some(1));
    assert!(
        stderr(&convert).contains("is the input itself; give another file"),
        "{}",
        stderr(&convert)
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), LACKEY_LOG);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".partial"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // Three fetches; two loads and the modify (one read); one store.
    let cg = &results[0];
    assert_eq!(
        (cg["Ir"].as_u64(), cg["Dr"].as_u64(), cg["Dw"].as_u64()),
        (Some(3), Some(3), Some(1))
    );
}

#[test]
fn reads_a_trace_from_stdin_and_prints_a_table() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["replay", "--cache", "I1=1K,2,32;D1=1K,2,32;L2=8K,4,64", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(LACKEY_LOG.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("native"), "{table}");
    // One simulating thread (beside the reading one, on a machine of several cores) is not
    // worth a line.
    assert!(!table.contains("simulated on"), "{table}");
    // Native mode: the modify is a read and a write.
    let d1 = table.lines().find(|l| l.starts_with("D1")).unwrap();
    let fields: Vec<&str> = d1.split_whitespace().collect();
    assert_eq!((fields[1], fields[4]), ("3", "2"), "{table}");
}

#[test]
fn errors_name_the_file_the_line_and_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.lackey").display().to_string();
    let out = epcache(&["replay", &missing]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(&format!("cannot open trace file `{missing}`")),
        "{}",
        stderr(&out)
    );

    let bad = dir.path().join("bad.lackey");
    std::fs::write(&bad, "==1== x\nI  00400000,4\n L 0060zz00,8\n").unwrap();
    let out = epcache(&["replay", "--format", "lackey", bad.to_str().unwrap()]);
    assert!(
        stderr(&out).contains("line 3: malformed trace line ` L 0060zz00,8`"),
        "{}",
        stderr(&out)
    );

    let not_epct = dir.path().join("x.epct");
    std::fs::write(&not_epct, "hello").unwrap();
    let out = epcache(&["replay", "--format", "epct", not_epct.to_str().unwrap()]);
    assert!(
        stderr(&out).contains("offset 0: not an epct trace"),
        "{}",
        stderr(&out)
    );

    // A user who keeps RUST_BACKTRACE set gets the message and its causes, not a backtrace.
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["replay", &missing])
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert!(text.starts_with("epcache: "), "{text}");
    assert!(!text.contains("backtrace"), "{text}");

    let empty = dir.path().join("empty.lackey");
    std::fs::write(&empty, "==1== nothing traced\n").unwrap();
    let out = epcache(&["replay", empty.to_str().unwrap()]);
    assert!(
        stderr(&out).contains("holds no trace records"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn replay_on_threads_reads_stdin_and_refuses_caches_it_cannot_share_out() {
    // Standard input moves to the reading thread; the counts are one thread's.
    let spec = "I1=1K,2,32;D1=1K,2,32;L2=8K,4,64";
    let replay_stdin = |threads: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args([
                "replay",
                "--json",
                "--cache",
                spec,
                "--threads",
                threads,
                "-",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        input.write_all(LACKEY_LOG.as_bytes()).unwrap();
        drop(input);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let (one, two) = (replay_stdin("1"), replay_stdin("2"));
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path());
    let table = epcache(&["replay", "--cache", spec, "--threads", "2", &log]);
    let table = String::from_utf8_lossy(&table.stdout);
    // The levels' set indexes share address bits 6 to 8: two slices of 256 bytes.
    assert!(
        table.contains("simulated on 2 threads, each owning the sets of one 256-byte block in 2"),
        "{table}"
    );
    assert_eq!(one["levels"], two["levels"]);
    assert_eq!(
        (one["threads"].as_u64(), two["threads"].as_u64()),
        (Some(1), Some(2))
    );

    let refusals = [
        (vec!["--threads", "3"], "power of two"),
        (
            vec!["--threads", "2", "--cache", "D1=32K,8,64,random:1"],
            "random replacement",
        ),
        (
            vec!["--threads", "2", "--cache", "D1=24K,8,64"],
            "48 sets, not a power of two",
        ),
        (
            vec!["--threads", "2", "--cache", "D1=4K,64,64;LL=1M,8,64"],
            "too few for 2",
        ),
    ];
    for (args, why) in refusals {
        let mut all = vec!["replay"];
        all.extend(&args);
        all.push(&log);
        let out = epcache(&all);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr(&out).contains(why), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn cachegrind_mode_rejects_shapes_cachegrind_rejects() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path());
    let out = epcache(&[
        "replay",
        "--cachegrind-compat",
        "--I1=32768,8,64",
        "--D1=24576,8,64",
        "--LL=262144,8,64",
        &log,
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("D1 has 48 sets"), "{}", stderr(&out));
    let out = epcache(&["replay", "--cache", "r12000", "--D1=32768,8,64", &log]);
    assert!(
        stderr(&out).contains("cannot be used with"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn run_refuses_coherence_events_without_a_machine_before_the_program_starts() {
    // The program does not exist: the refusal must come before anything is started.
    let args = |cores: &'static [&'static str]| {
        let mut all = vec![
            "run",
            "--region",
            "main",
            "--array",
            "a",
            "--event",
            "EPC_L1_FSM",
        ];
        all.extend(cores);
        all.extend(["--", "/nonexistent/program"]);
        all
    };
    // Not inherited from whoever runs the tests.
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args(args)
            .env_remove("EPCACHE_CORES")
            .output()
            .expect("running epcache")
    };
    for cores in [&[][..], &["--cores", "1"], &["--cores", "off"]] {
        let out = run(&args(cores));
        assert!(!out.status.success());
        let text = stderr(&out);
        assert!(
            text.contains("EPC_L1_FSM counts coherence events")
                && text.contains("--cores N")
                && text.contains("nothing was started"),
            "{cores:?}: {text}"
        );
    }
    // With a machine the same request passes the check and fails only at the missing program.
    let text = stderr(&run(&args(&["--cores", "2"])));
    assert!(!text.contains("coherence events"), "{text}");
    assert!(text.contains("/nonexistent/program"), "{text}");
    // A coherence miss at a level every core shares would count nothing.
    let text = stderr(&run(&[
        "run",
        "--cores",
        "2",
        "--cache",
        "D1=32K,8,64;LL=8M,16,64,shared",
        "--region",
        "main",
        "--array",
        "a",
        "--event",
        "EPC_L2_TSM",
        "--",
        "/nonexistent/program",
    ]));
    assert!(
        text.contains("LL is one cache shared by all 2 cores")
            && text.contains("(D1)")
            && text.contains("nothing was started"),
        "{text}"
    );
}

#[test]
fn run_refuses_a_machine_it_cannot_make_before_the_program_starts() {
    // The program does not exist: each refusal must come before anything is started.
    let run = |cores: &str, cache: &str, env: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_epcache"));
        command.args(["run", "--all-regions", "--cache", cache]);
        if !cores.is_empty() {
            command.args(["--cores", cores]);
        }
        command
            .args(["--", "/nonexistent/program"])
            .env_remove("EPCACHE_CORES");
        if let Some(value) = env {
            command.env("EPCACHE_CORES", value);
        }
        stderr(&command.output().expect("running epcache"))
    };
    let same = "D1=32K,8,64;LL=8M,16,64,shared";
    let text = run("2x", same, None);
    assert!(
        text.contains("--cores 2x: `2x` is not a number of cores")
            && text.contains("nothing was started"),
        "{text}"
    );
    let text = run("2:", same, None);
    assert!(text.contains("empty place"), "{text}");
    let text = run("", same, Some("2:0,5"));
    assert!(
        text.contains("EPCACHE_CORES=2:0,5: `5` is not a core from 0 to 1"),
        "{text}"
    );
    // Coherence needs one line size at every level.
    let text = run("2", "D1=32K,8,32;LL=8M,16,64", None);
    assert!(
        text.contains("cannot be a machine of 2 cores") && text.contains("one line size"),
        "{text}"
    );
    // A machine that can be made passes: the run fails only at the missing program.
    let text = run("2", same, None);
    assert!(!text.contains("machine"), "{text}");
    assert!(text.contains("/nonexistent/program"), "{text}");
}

#[test]
fn run_refuses_analyses_on_a_machine_of_cores_before_the_program_starts() {
    // The program does not exist: the refusal must come before anything is started.
    let out = epcache(&[
        "run",
        "--cores",
        "2",
        "--analysis",
        "reuse",
        "--region",
        "main",
        "--array",
        "a",
        "--",
        "/nonexistent/program",
    ]);
    assert!(!out.status.success());
    let text = stderr(&out);
    assert!(
        text.contains("--analysis")
            && text.contains("--cores")
            && text.contains("cannot be used with"),
        "{text}"
    );
}

#[test]
fn a_launch_error_says_its_cause_once() {
    // Printed as `epcache` prints errors, message then causes: the OS error is the cause, not
    // also part of the message.
    let error = anyhow::Error::from(epcache_client::LocalError::Spawn {
        program: "/x/prog".into(),
        source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
    });
    let chain: Vec<String> = error.chain().map(ToString::to_string).collect();
    assert_eq!(chain.len(), 2, "{chain:?}");
    assert!(
        chain[0].contains("/x/prog") && !chain[0].contains("denied"),
        "{chain:?}"
    );
    assert!(chain[1].contains("denied"), "{chain:?}");
}

#[test]
fn a_trace_that_cannot_be_read_says_why_once() {
    // A directory opens but cannot be read: the OS error is the last cause, said once.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap();
    for format in ["lackey", "epct", "partial"] {
        let out = epcache(&["replay", "--format", format, path]);
        assert!(!out.status.success());
        let text = stderr(&out);
        assert_eq!(
            text.matches("Is a directory").count(),
            1,
            "{format}: {text}"
        );
        assert!(text.contains("cannot read the trace"), "{format}: {text}");
    }
}

/// A wrong command line is exit status 1, as every command's help says ("1 anything else"),
/// never 2, which `epcache run` gives a program it could not monitor; help is status 0.
#[test]
fn a_wrong_command_line_is_status_one_and_help_zero() {
    for args in [
        &["step", "1", "--timeout", "0"][..],
        &["run", "--cores", "-1", "--", "/nonexistent/program"],
        // Nothing to measure: refused rather than run with nothing printed.
        &["run", "--", "/bin/true"],
        &["run", "--sort", "name", "--", "/bin/true"],
        &[
            "run",
            "--trace",
            "f",
            "--top",
            "3",
            "--output",
            "t.eppt",
            "--",
            "/bin/true",
        ],
        &["replay", "--mrc", "2,48", "t.eppt"],
        &["histogram", "1", "2", "--width", "0"],
        // A port no TCP port can be, said as such rather than as a refused connection.
        &["targets", "--daemon", "localhost:99999"],
        &["no-such-command"],
    ] {
        let out = epcache(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).is_empty(), "{args:?}: said nothing");
    }
    let out = epcache(&["step", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Exit status"));
}

/// An output that is the file the command works from is refused before anything is written:
/// `epcache run --output` naming the program, `epcache annotate -o` naming its report.
#[test]
fn an_output_that_is_the_program_or_the_report_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("prog");
    std::fs::copy("/bin/true", &program).unwrap();
    let before = std::fs::read(&program).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["run", "--all-regions", "--output", "prog", "--", "./prog"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--output prog is the program itself")
            && stderr(&out).contains("nothing was started"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&program).unwrap(), before);

    let report = dir.path().join("report.json");
    std::fs::write(
        &report,
        r#"{"cache":"D1=32K,8,64","levels":[],"regions":[]}"#,
    )
    .unwrap();
    let before = std::fs::read(&report).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
        .args(["annotate", "report.json", "-o", "./report.json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is the report itself"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&report).unwrap(), before);
}

/// `annotate --top 0` would print the headers alone: refused with what it takes.
#[test]
fn annotate_shows_at_least_one_line() {
    let out = epcache(&["annotate", "report.json", "--top", "0"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("at least 1"), "{}", stderr(&out));
}

/// A tool refuses a token file other users can read before it connects, as the daemon does.
#[test]
fn a_token_file_others_can_read_is_refused_by_the_tool() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "the-right-token-of-enough-length\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = epcache(&[
        "targets",
        "--daemon",
        "127.0.0.1:1",
        "--token-file",
        &token.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("chmod 600"), "{}", stderr(&out));
}

/// `$EPCACHE_TOKEN` holds the token itself: one naming a file is refused with the option that
/// reads a file, by the tools and by `epcache run --daemon`, before anything connects or starts.
#[test]
fn a_token_variable_naming_a_file_is_told_to_be_the_token_itself() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "the-right-token-of-enough-length\n").unwrap();
    let marker = dir.path().join("started");
    for args in [
        vec!["targets", "--daemon", "127.0.0.1:1"],
        vec![
            "run",
            "--daemon",
            "127.0.0.1:1",
            "--all-regions",
            "--",
            "touch",
        ],
    ] {
        let mut args: Vec<String> = args.into_iter().map(str::to_owned).collect();
        if args[0] == "run" {
            args.push(marker.display().to_string());
        }
        let out = Command::new(env!("CARGO_BIN_EXE_epcache"))
            .args(&args)
            .env("EPCACHE_TOKEN", &token)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("--token-file {}", token.display())),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert!(!marker.exists(), "the program was started");
}

/// A trace cut within the bytes both binary formats begin with is said to be cut, not taken for
/// one of them.
#[test]
fn a_trace_cut_before_its_format_shows_is_said_to_be() {
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.eppt");
    std::fs::write(&cut, b"\x89EP").unwrap();
    let out = epcache(&[
        "replay",
        "--cache",
        "D1=32K,8,64",
        &cut.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("only 3 byte(s)") && !stderr(&out).contains("epct trace"),
        "{}",
        stderr(&out)
    );
}
