//! What the daemon's end-to-end tests share: a real daemon on the socket of an isolated runtime
//! directory and real target processes (this test binary run again as the synthetic program),
//! both from `epcache-test-support`, and raw MRI clients that name themselves as tools.

pub(crate) use epcache_test_support::{processes, synthetic};

pub(crate) use processes::*;

use std::time::{Duration, Instant};

use epcache_daemon::DaemonHandle;
use epcache_proto::v1;
use epcache_proto::v1::mri_client::MriClient;
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

/// Adds the `epcache-tool` metadata to every call.
#[derive(Clone)]
pub(crate) struct Tool(pub String);

impl Interceptor for Tool {
    fn call(&mut self, mut r: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        r.metadata_mut()
            .insert(epcache_daemon::TOOL_METADATA, self.0.parse().unwrap());
        Ok(r)
    }
}

pub(crate) type Client = MriClient<InterceptedService<Channel, Tool>>;

/// A channel to `endpoint`: `unix:PATH` or `http://HOST:PORT`.
pub(crate) async fn channel(endpoint: &str) -> Result<Channel, tonic::transport::Error> {
    match endpoint.strip_prefix("unix:") {
        Some(path) => {
            let path = std::path::PathBuf::from(path);
            // The URI is a placeholder the connector ignores.
            tonic::transport::Endpoint::from_static("http://[::1]:50551")
                .connect_with_connector(tower::service_fn(move |_| {
                    let path = path.clone();
                    async move {
                        let stream = tokio::net::UnixStream::connect(path).await?;
                        Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
                    }
                }))
                .await
        }
        None => {
            Channel::from_shared(endpoint.to_owned())
                .unwrap()
                .connect()
                .await
        }
    }
}

/// A client of `daemon` calling itself `tool`.
pub(crate) async fn connect(daemon: &DaemonHandle, tool: &str) -> Client {
    MriClient::with_interceptor(
        channel(&daemon.endpoint()).await.unwrap(),
        Tool(tool.into()),
    )
}

/// The target `pid` once the daemon lists it past its setup (state `Starting`), as a tool waits
/// before describing it.
pub(crate) async fn wait_listed(client: &mut Client, pid: u32) -> v1::Target {
    let started = Instant::now();
    loop {
        let targets = client
            .list_targets(v1::ListTargetsRequest {})
            .await
            .unwrap()
            .into_inner()
            .targets;
        let listed = format!("{targets:?}");
        if let Some(t) = targets.into_iter().find(|t| t.pid == pid)
            && t.state() != v1::TargetState::Starting
        {
            return t;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the daemon never listed pid {pid} past Starting: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A region selector by name.
pub(crate) fn region(name: &str) -> v1::RegionSelector {
    v1::RegionSelector {
        by: Some(v1::region_selector::By::Name(name.into())),
    }
}

/// A static count of `event` over the data structure `data` during `region`.
pub(crate) fn static_request(region_name: &str, data: &str, event: &str) -> v1::MonitoringRequest {
    v1::MonitoringRequest {
        region: Some(region(region_name)),
        data: Some(v1::DataSelector {
            by: Some(v1::data_selector::By::Name(data.into())),
        }),
        event: event.into(),
        mode: Some(v1::monitoring_request::Mode::StaticCount(v1::StaticMode {})),
        aggregation: v1::Aggregation::Summed as i32,
        analyses: vec![],
        site_block: 0,
    }
}

/// A histogram of `event` over `data` during `region` in `buckets` buckets.
pub(crate) fn histogram_request(
    region_name: &str,
    data: &str,
    event: &str,
    buckets: u32,
) -> v1::MonitoringRequest {
    v1::MonitoringRequest {
        mode: Some(v1::monitoring_request::Mode::Histogram(v1::HistogramMode {
            granularity: Some(v1::histogram_mode::Granularity::Buckets(buckets)),
        })),
        ..static_request(region_name, data, event)
    }
}

/// Steps `pid` to the next exit of `region_name` and returns the halt.
pub(crate) async fn step_to_exit(client: &mut Client, pid: u32, region_name: &str) -> v1::Halt {
    let reply = client
        .step(v1::StepRequest {
            pid,
            until: Some(v1::step_request::Until::RegionExit(region(region_name))),
            count: 1,
            timeout_ms: 20_000,
        })
        .await
        .unwrap()
        .into_inner();
    match reply.outcome {
        Some(v1::step_response::Outcome::Halted(h)) => h,
        other => panic!("expected a halt at the exit of {region_name}, got {other:?}"),
    }
}
