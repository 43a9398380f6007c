//! What every daemon subcommand shares: the `--daemon`, `--token-file`, `--tool` and `--json`
//! options, connecting, a runtime for one command, and plain-text tables.

use std::future::Future;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use epcache_client::{Client, ConnectOptions, default_address};

/// How to reach the daemon.
#[derive(Debug, Clone, Args)]
pub(crate) struct DaemonArgs {
    /// The daemon: unix:PATH, or HOST:PORT / a port alone (a TCP daemon needs a token) [default:
    /// $EPCACHE_DAEMON, else the daemon's socket in your runtime directory,
    /// unix:RUNTIME_DIR/epcached.sock].
    #[arg(long, value_name = "ADDR")]
    daemon: Option<String>,
    /// A file holding the daemon's bearer token; without it, the token itself from
    /// $EPCACHE_TOKEN (its value, not a file's name), else none.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// For an https:// daemon: the CA certificate (PEM) that signed its certificate [default:
    /// $EPCACHE_CA_CERT]; needs a build with the `tls` feature.
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<PathBuf>,
    /// The tool name requests are placed under (`epcache cancel` and the MRI's Detach act on one
    /// tool's requests).
    #[arg(long, value_name = "NAME", default_value = "epcache-cli")]
    tool: String,
}

impl DaemonArgs {
    /// The address to use.
    pub(crate) fn address(&self) -> String {
        self.daemon
            .clone()
            .or_else(|| {
                std::env::var("EPCACHE_DAEMON")
                    .ok()
                    .filter(|a| !a.is_empty())
            })
            .unwrap_or_else(default_address)
    }

    /// Connects, with the token and tool name.
    pub(crate) async fn connect(&self) -> anyhow::Result<Client> {
        let token = bearer_token(self.token_file.as_deref())?;
        let ca = self
            .ca_cert
            .clone()
            .or_else(|| std::env::var_os("EPCACHE_CA_CERT").map(PathBuf::from));
        let ca_certificate = match ca {
            Some(path) => Some(
                std::fs::read(&path)
                    .with_context(|| format!("reading the CA certificate {}", path.display()))?,
            ),
            None => None,
        };
        Ok(Client::connect_with(ConnectOptions {
            address: self.address(),
            token,
            tool: self.tool.clone(),
            ca_certificate,
            ..ConnectOptions::default()
        })
        .await?)
    }
}

/// Runs one command's future on a runtime of its own.
pub(crate) fn block_on<T>(future: impl Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(future)
}

/// Lays out rows under a header, columns padded to their widest cell; a column whose header
/// starts with '>' is right-aligned (the '>' is not printed).
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let right: Vec<bool> = header.iter().map(|h| h.starts_with('>')).collect();
    let header: Vec<String> = header
        .iter()
        .map(|h| h.trim_start_matches('>').to_owned())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = widths[i].saturating_sub(cell.chars().count());
            if i > 0 {
                out.push_str("  ");
            }
            if right[i] {
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            } else {
                out.push_str(cell);
                if i + 1 < cells.len() {
                    out.push_str(&" ".repeat(pad));
                }
            }
        }
        out.push('\n');
        out
    };
    let mut out = line(&header);
    for row in rows {
        out.push_str(&line(row));
    }
    out
}

/// JSON of `value`, pretty, with a final newline.
pub(crate) fn json(value: &impl serde::Serialize) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(value)? + "\n")
}

/// The bearer token a tool sends: read from `token_file`, else `$EPCACHE_TOKEN`'s value (see
/// [`epcache_daemon::bearer_token`]), else none.
pub(crate) fn bearer_token(token_file: Option<&std::path::Path>) -> anyhow::Result<Option<String>> {
    Ok(epcache_daemon::bearer_token(token_file, "EPCACHE_TOKEN")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_pad_and_align() {
        let t = table(
            &["NAME", ">COUNT"],
            &[
                vec!["a".into(), "1".into()],
                vec!["long".into(), "100".into()],
            ],
        );
        assert_eq!(t, "NAME  COUNT\na         1\nlong    100\n");
    }
}
