//! The typed async client: one gRPC channel to one daemon (TCP or Unix socket), with the tool's
//! name and bearer token on every call.

use std::time::Duration;

use epcache_proto::v1;
use epcache_proto::v1::mri_client::MriClient;
use tokio_stream::{Stream, StreamExt};
use tonic::metadata::MetadataValue;
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};

use crate::types::{
    Description, Detached, Event, HaltingPoint, Request, RequestInfo, RequestResult, StepOutcome,
    StepTo, Target, TraceInfo, TraceOrder,
};
use crate::{ClientError, default_address};

/// How to reach a daemon and who is calling.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// `unix:PATH`, `HOST:PORT`, `http://HOST:PORT` or a port alone (on 127.0.0.1); the default
    /// is [`crate::default_address`].
    pub address: String,
    /// The bearer token the daemon requires, if any.
    pub token: Option<String>,
    /// The tool's name; requests and halting points are owned by it (see [`Client::detach`]).
    pub tool: String,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// For an `https://` address: the PEM certificate of the CA that signed the daemon's
    /// certificate (needs the `tls` feature).
    pub ca_certificate: Option<Vec<u8>>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            address: default_address(),
            token: None,
            tool: format!("epcache-client-{}", std::process::id()),
            connect_timeout: Duration::from_secs(5),
            ca_certificate: None,
        }
    }
}

#[derive(Clone)]
struct CallMetadata {
    tool: Option<MetadataValue<tonic::metadata::Ascii>>,
    authorization: Option<MetadataValue<tonic::metadata::Ascii>>,
}

impl Interceptor for CallMetadata {
    fn call(&mut self, mut r: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(tool) = &self.tool {
            r.metadata_mut().insert("epcache-tool", tool.clone());
        }
        if let Some(auth) = &self.authorization {
            r.metadata_mut().insert("authorization", auth.clone());
        }
        Ok(r)
    }
}

/// A connection to one epcached; cheap to clone (clones share the channel).
///
/// ```no_run
/// use epcache_client::{Client, Request, StepOutcome, StepTo};
///
/// # async fn demo() -> Result<(), epcache_client::ClientError> {
/// let mut client = Client::connect(&epcache_client::default_address()).await?;
/// let target = client.targets().await?.into_iter().next().expect("a monitored program runs");
/// let placed = client
///     .request(target.pid, Request::histogram("gauss_original", "A", "PAPI_L1_LDM", 25))
///     .await?;
/// if let StepOutcome::Halted(halt) = client.step(target.pid, StepTo::RegionExit("gauss_original".into())).await? {
///     println!("halted at {:?}", halt.position);
/// }
/// let result = &client.results(target.pid, &[placed.id]).await?[0];
/// for bucket in &result.buckets {
///     println!("{:#x}..{:#x}: {}", bucket.range.start, bucket.range.end, bucket.count);
/// }
/// client.detach(target.pid).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: MriClient<InterceptedService<Channel, CallMetadata>>,
    address: String,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("address", &self.address)
            .finish()
    }
}

fn tcp_uri(address: &str) -> Result<String, ClientError> {
    let a = address.trim();
    if a.starts_with("http://") || a.starts_with("https://") {
        return Ok(a.to_owned());
    }
    if !a.is_empty() && a.bytes().all(|b| b.is_ascii_digit()) {
        // A port alone: one a TCP port can be.
        return match a.parse::<u16>() {
            Ok(port) if port > 0 => Ok(format!("http://127.0.0.1:{port}")),
            _ => Err(ClientError::Address {
                address: address.to_owned(),
            }),
        };
    }
    // HOST:PORT: the port one a TCP port can be (not 99999, which would only fail to connect).
    if let Some((host, port)) = a.rsplit_once(':')
        && !host.is_empty()
    {
        return match port.parse::<u16>() {
            Ok(p) if p > 0 => Ok(format!("http://{a}")),
            _ => Err(ClientError::Address {
                address: address.to_owned(),
            }),
        };
    }
    Err(ClientError::Address {
        address: address.to_owned(),
    })
}

#[cfg(feature = "tls")]
fn with_tls(endpoint: Endpoint, options: &ConnectOptions) -> Result<Endpoint, ClientError> {
    let mut tls = tonic::transport::ClientTlsConfig::new();
    if let Some(ca) = &options.ca_certificate {
        tls = tls.ca_certificate(tonic::transport::Certificate::from_pem(ca));
    }
    endpoint
        .tls_config(tls)
        .map_err(|source| ClientError::Connect {
            address: options.address.clone(),
            source,
            advice: START_ONE.to_owned(),
        })
}

#[cfg(not(feature = "tls"))]
fn with_tls(_: Endpoint, options: &ConnectOptions) -> Result<Endpoint, ClientError> {
    Err(ClientError::Protocol(format!(
        "{} needs TLS, and this client was built without it (cargo feature `tls` of epcache-client)",
        options.address
    )))
}

/// What to try when no daemon answers.
const START_ONE: &str = "is it running (`epcached`, or `epcache run` for one program)?";

/// When the socket at `path` belongs to another user: whose, and that a daemon serves its own
/// user's programs only (the kernel refuses the connection, or the daemon closes it).
fn foreign_socket(path: &std::path::Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::metadata(path).ok()?.uid();
    let me = epcache_shm::current_uid();
    let root = if me == 0 {
        " (and root only when it was started with --allow-root)"
    } else {
        ""
    };
    (owner != me).then(|| {
        format!(
            "the socket belongs to uid {owner}, not to you (uid {me}), and a daemon serves its own user's programs only{root}: start your own (`epcached`, or `epcache run` for one program)"
        )
    })
}

impl Client {
    /// Connects to the daemon at `address` (`HOST:PORT`, a port alone, or `unix:PATH`).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), epcache_client::ClientError> {
    /// let mut client = epcache_client::Client::connect("unix:/run/epcache/epcached.sock").await?;
    /// for t in client.targets().await? {
    ///     println!("{} {} {}", t.pid, t.program, t.state);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn connect(address: &str) -> Result<Client, ClientError> {
        Client::connect_with(ConnectOptions {
            address: address.to_owned(),
            ..ConnectOptions::default()
        })
        .await
    }

    /// Connects with a token, a tool name and a timeout.
    pub async fn connect_with(options: ConnectOptions) -> Result<Client, ClientError> {
        let unix_path = options
            .address
            .trim()
            .strip_prefix("unix:")
            .map(|p| std::path::PathBuf::from(p.strip_prefix("//").unwrap_or(p)));
        let connect_err = |source| ClientError::Connect {
            address: options.address.clone(),
            source,
            advice: unix_path
                .as_deref()
                .and_then(foreign_socket)
                .unwrap_or_else(|| START_ONE.to_owned()),
        };
        let channel = if let Some(path) = unix_path.clone() {
            // The URI is a placeholder the connector ignores; hyper needs one.
            Endpoint::from_static("http://[::1]:50551")
                .connect_timeout(options.connect_timeout)
                .connect_with_connector(tower::service_fn(move |_| {
                    let path = path.clone();
                    async move {
                        let stream = tokio::net::UnixStream::connect(path).await?;
                        Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
                    }
                }))
                .await
                .map_err(connect_err)?
        } else {
            let uri = tcp_uri(&options.address)?;
            let endpoint = Endpoint::from_shared(uri.clone())
                .map_err(|_| ClientError::Address {
                    address: options.address.clone(),
                })?
                .connect_timeout(options.connect_timeout)
                .tcp_nodelay(true);
            let endpoint = if uri.starts_with("https://") {
                with_tls(endpoint, &options)?
            } else {
                endpoint
            };
            endpoint.connect().await.map_err(connect_err)?
        };
        let value = |text: String, what: &str| {
            text.parse::<MetadataValue<tonic::metadata::Ascii>>()
                .map_err(|_| ClientError::Address {
                    address: format!("{what} must be printable ASCII"),
                })
        };
        let metadata = CallMetadata {
            tool: Some(value(options.tool.clone(), "the tool name")?),
            authorization: options
                .token
                .as_ref()
                .map(|t| value(format!("Bearer {}", t.trim()), "the token"))
                .transpose()?,
        };
        let mut client = Client {
            inner: MriClient::with_interceptor(channel, metadata),
            address: options.address,
        };
        // Another user's daemon serves only its own user (root only when it allows root), and
        // closes the connection of anyone else at once: asked now, a refusal is said as such
        // rather than as the first call's broken transport.
        if let Some(advice) = unix_path.as_deref().and_then(foreign_socket)
            && let Err(status) = client
                .inner
                .list_targets(v1::ListTargetsRequest {})
                .await
            // A closed connection, not a daemon's own refusal (those carry its words).
            && (status.code() == tonic::Code::Cancelled
                || matches!(ClientError::from(status.clone()), ClientError::Lost(_)))
        {
            return Err(ClientError::Refused {
                address: client.address,
                why: status.message().to_owned(),
                advice,
            });
        }
        Ok(client)
    }

    /// The targets the daemon knows, by pid: running ones and those that ended recently.
    pub async fn targets(&mut self) -> Result<Vec<Target>, ClientError> {
        self.inner
            .list_targets(v1::ListTargetsRequest {})
            .await?
            .into_inner()
            .targets
            .into_iter()
            .map(Target::try_from)
            .collect()
    }

    /// Regions, data structures, cache model, events and requests of one target.
    pub async fn describe(&mut self, pid: u32) -> Result<Description, ClientError> {
        self.inner
            .describe_target(v1::DescribeTargetRequest { pid })
            .await?
            .into_inner()
            .try_into()
    }

    /// Places one request; the target picks it up at its region's next entry.
    pub async fn request(
        &mut self,
        pid: u32,
        request: Request,
    ) -> Result<RequestInfo, ClientError> {
        let mut placed = self.requests(pid, &[request]).await?;
        placed
            .pop()
            .ok_or_else(|| ClientError::Protocol("the daemon placed no request".into()))
    }

    /// Places several requests, all or none.
    pub async fn requests(
        &mut self,
        pid: u32,
        requests: &[Request],
    ) -> Result<Vec<RequestInfo>, ClientError> {
        self.inner
            .add_requests(v1::AddRequestsRequest {
                pid,
                requests: requests.iter().map(Request::to_mri).collect(),
            })
            .await?
            .into_inner()
            .requests
            .into_iter()
            .map(RequestInfo::try_from)
            .collect()
    }

    /// Withdraws requests by id; no ids withdraws every request this tool placed on the target.
    pub async fn cancel(&mut self, pid: u32, ids: &[u64]) -> Result<Vec<u64>, ClientError> {
        Ok(self
            .inner
            .cancel_requests(v1::CancelRequestsRequest {
                pid,
                ids: ids.to_vec(),
            })
            .await?
            .into_inner()
            .cancelled)
    }

    /// Arms (or with `None` clears) the target's halting point. It belongs to this client's
    /// connection: when the connection closes (the client is dropped, the process ends), the
    /// daemon takes it back, and lets the target go if it halted there with no step to receive it.
    pub async fn set_halting_point(
        &mut self,
        pid: u32,
        point: Option<HaltingPoint>,
    ) -> Result<(), ClientError> {
        self.inner
            .set_halting_point(v1::SetHaltingPointRequest {
                pid,
                point: point.as_ref().map(HaltingPoint::to_mri),
            })
            .await?;
        Ok(())
    }

    /// Lets a halted target run on (the MRI's Continue), to its halting point if one is armed,
    /// or to its end with `clear_halting_point` (which also succeeds on a running target). The
    /// release is forced when the target's state word cannot be read.
    pub async fn resume(&mut self, pid: u32, clear_halting_point: bool) -> Result<(), ClientError> {
        self.inner
            .r#continue(v1::ContinueRequest {
                pid,
                clear_halting_point,
            })
            .await?;
        Ok(())
    }

    /// Runs the target to `to` and waits for the halt there, or its end. The halting point
    /// belongs to this call: if it ends without the halt (the future is dropped, a timeout), the
    /// daemon takes the point back and the target runs on; a halt returned stays until the next
    /// step, continue or detach.
    pub async fn step(&mut self, pid: u32, to: StepTo) -> Result<StepOutcome, ClientError> {
        self.step_by(pid, to, 1, None).await
    }

    /// Like [`Client::step`], `count` matching boundaries on, waiting at most `timeout`
    /// (a timeout is [`ClientError::Rpc`] with `DeadlineExceeded`; the point is taken back and
    /// the target runs on).
    pub async fn step_by(
        &mut self,
        pid: u32,
        to: StepTo,
        count: u32,
        timeout: Option<Duration>,
    ) -> Result<StepOutcome, ClientError> {
        let reply = self
            .inner
            .step(v1::StepRequest {
                pid,
                until: to.to_mri(),
                count,
                timeout_ms: timeout.map_or(0, |t| t.as_millis().max(1) as u64),
            })
            .await?
            .into_inner();
        match reply.outcome {
            Some(v1::step_response::Outcome::Halted(h)) => Ok(StepOutcome::Halted(h.try_into()?)),
            Some(v1::step_response::Outcome::Exited(e)) => Ok(StepOutcome::Exited(e.into())),
            None => Err(ClientError::Protocol(
                "the daemon's step answer has no outcome".into(),
            )),
        }
    }

    /// A stream of events of one target (`Some(pid)`), or of every target including those that
    /// start later (`None`). It begins with each target's state; a target's stream ends after
    /// its exit.
    ///
    /// ```no_run
    /// use tokio_stream::StreamExt;
    /// # async fn demo(mut client: epcache_client::Client, pid: u32) -> Result<(), epcache_client::ClientError> {
    /// let mut events = client.watch(Some(pid)).await?;
    /// while let Some(event) = events.next().await {
    ///     match event? {
    ///         epcache_client::Event::Halted { halt, .. } => println!("halted at {:?}", halt.position),
    ///         epcache_client::Event::ResultUpdated { result, .. } => println!("{} so far", result.total),
    ///         epcache_client::Event::Exited { exit, .. } => println!("ended: {}", exit.reason),
    ///         epcache_client::Event::Target { target } => println!("{} is {}", target.pid, target.state),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn watch(
        &mut self,
        pid: Option<u32>,
    ) -> Result<impl Stream<Item = Result<Event, ClientError>> + Send + 'static, ClientError> {
        let stream = self
            .inner
            .watch(v1::WatchRequest {
                pid: pid.unwrap_or(0),
            })
            .await?
            .into_inner();
        Ok(stream.map(|item| item.map_err(ClientError::from).and_then(Event::try_from)))
    }

    /// The latest results of requests by id; no ids means every request on the target.
    pub async fn results(
        &mut self,
        pid: u32,
        ids: &[u64],
    ) -> Result<Vec<RequestResult>, ClientError> {
        self.inner
            .read_results(v1::ReadResultsRequest {
                pid,
                ids: ids.to_vec(),
            })
            .await?
            .into_inner()
            .results
            .into_iter()
            .map(RequestResult::try_from)
            .collect()
    }

    /// Cancels this tool's requests on the target, clears its halting point and lets it go.
    pub async fn detach(&mut self, pid: u32) -> Result<Detached, ClientError> {
        let d = self
            .inner
            .detach(v1::DetachRequest { pid })
            .await?
            .into_inner();
        Ok(Detached {
            cancelled: d.cancelled,
            cleared_halting_point: d.cleared_halting_point,
            released: d.released,
        })
    }

    /// Asks the target to end (SIGTERM, after the daemon checked it is the same process).
    pub async fn terminate(&mut self, pid: u32) -> Result<(), ClientError> {
        self.inner.terminate(v1::TerminateRequest { pid }).await?;
        Ok(())
    }

    /// Asks target `pid`, which must be waiting at its start (`EPCACHE_WAIT`), to record the
    /// partial trace `order` once released; the order comes back pending.
    pub async fn start_trace(
        &mut self,
        pid: u32,
        order: &TraceOrder,
    ) -> Result<TraceInfo, ClientError> {
        let reply = self
            .inner
            .start_trace(order.to_mri(pid))
            .await?
            .into_inner();
        trace_info(reply.trace)
    }

    /// What became of trace order `id` on target `pid`.
    pub async fn read_trace(&mut self, pid: u32, id: u32) -> Result<TraceInfo, ClientError> {
        let reply = self
            .inner
            .read_trace(v1::ReadTraceRequest { pid, id })
            .await?
            .into_inner();
        trace_info(reply.trace)
    }
}

/// The trace a daemon's `StartTrace` or `ReadTrace` answer carries.
fn trace_info(trace: Option<v1::TraceInfo>) -> Result<TraceInfo, ClientError> {
    trace
        .ok_or_else(|| ClientError::Protocol("the daemon's answer lacks the trace".into()))?
        .try_into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_become_uris() {
        assert_eq!(tcp_uri("127.0.0.1:5").unwrap(), "http://127.0.0.1:5");
        assert_eq!(tcp_uri("5").unwrap(), "http://127.0.0.1:5");
        assert_eq!(tcp_uri("http://h:1").unwrap(), "http://h:1");
        assert_eq!(tcp_uri("[::1]:7").unwrap(), "http://[::1]:7");
        assert!(tcp_uri("nowhere").is_err());
        assert!(tcp_uri("99999999").is_err());
        assert!(tcp_uri("0").is_err());
        assert!(tcp_uri("localhost:99999").is_err());
        assert!(tcp_uri("localhost:").is_err());
        assert!(tcp_uri(":5").is_err());
    }
}
