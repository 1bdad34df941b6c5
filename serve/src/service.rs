//! The `Adapter` gRPC service: each call converts its request, runs the
//! host's call (`call::run`) and converts the answer. Streams of bytes
//! travel as `Chunk`s, or on a byte channel when the client asks for one
//! (`channel`); `streams` holds the plumbing.

use std::pin::Pin;

use futures::Stream;
use pando_host::types as h;
use tonic::{Request, Response, Status, Streaming};

use crate::call::{self, Adapters};
use crate::channel::Channels;
use crate::pb;
use crate::pb::adapter_server::Adapter as Service;
use crate::status;
use crate::streams;

/// The largest message the service takes or sends.
pub const MAX_MESSAGE: usize = 64 << 20;

/// A stream of messages a call sends.
pub type Out<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// Serves `Adapters` as the contract's `Adapter` service.
#[derive(Debug, Clone)]
pub struct AdapterService {
    adapters: Adapters,
    channels: Channels,
}

impl AdapterService {
    /// Serves these adapters, streams of bytes as `Chunk`s only.
    pub fn new(adapters: Adapters) -> Self {
        AdapterService {
            adapters,
            channels: Channels::default(),
        }
    }

    /// Streams of bytes also on the byte channels clients make in `dir`.
    pub fn with_channels(mut self, channels: Channels) -> Self {
        self.channels = channels;
        self
    }
}

/// The header a stream's answer carries once what it streams is open
/// (`Logs`, `Exec`): a failure before that is an answer with no headers, only
/// the status, and a client that waits for this header tells the two apart
/// without reading the stream.
pub const OPENED_HEADER: &str = "pando-opened";

fn opened<T>(mut r: Response<T>) -> Response<T> {
    r.metadata_mut().insert(
        OPENED_HEADER,
        tonic::metadata::MetadataValue::from_static("1"),
    );
    r
}

fn req<P, H>(m: Option<P>, what: &str) -> Result<H, Status>
where
    H: TryFrom<P, Error = crate::convert::Invalid>,
{
    let m = m.ok_or_else(|| status::invalid(crate::convert::Invalid::missing(what)))?;
    H::try_from(m).map_err(status::invalid)
}

fn conv<P, H: TryFrom<P, Error = crate::convert::Invalid>>(m: P) -> Result<H, Status> {
    H::try_from(m).map_err(status::invalid)
}

/// A call that answers once: the adapter the request names, the request's
/// deadline (else the adapter's default; with `long`, none: a stream's
/// opening whose stream lives on), run by `call::run`.
macro_rules! unary {
    ($self:ident, $request:ident, |$a:ident, $ctx:ident| $body:expr) => {
        unary!($self, $request, false, |$a, $ctx| $body)
    };
    ($self:ident, $request:ident, $long:expr, |$a:ident, $ctx:ident| $body:expr) => {{
        let $a = $self.adapters.pick($request.metadata())?.clone();
        let ctx = call::context($request.metadata(), $long);
        call::run(ctx, move |$ctx| async move { $body }).await
    }};
}

#[tonic::async_trait]
impl Service for AdapterService {
    async fn info(
        &self,
        request: Request<pb::InfoRequest>,
    ) -> Result<Response<pb::KindInfo>, Status> {
        let a = self.adapters.pick(request.metadata())?;
        Ok(Response::new(a.kind_info().clone().into()))
    }

    async fn capabilities(
        &self,
        request: Request<pb::CapabilitiesRequest>,
    ) -> Result<Response<pb::RuntimeCapabilities>, Status> {
        let caps = unary!(self, request, |a, ctx| a.capabilities(&ctx).await)?;
        Ok(Response::new(caps.into()))
    }

    async fn health_check(
        &self,
        request: Request<pb::HealthCheckRequest>,
    ) -> Result<Response<pb::HealthCheckResponse>, Status> {
        unary!(self, request, |a, ctx| a.health_check(&ctx).await)?;
        Ok(Response::new(pb::HealthCheckResponse {}))
    }

    async fn capacity(
        &self,
        request: Request<pb::CapacityRequest>,
    ) -> Result<Response<pb::CapacityReport>, Status> {
        let r = unary!(self, request, |a, ctx| a.capacity(&ctx).await)?;
        Ok(Response::new(r.into()))
    }

    async fn largest_fit_for(
        &self,
        request: Request<pb::LargestFitForRequest>,
    ) -> Result<Response<pb::LargestFitForResponse>, Status> {
        let bundle = request.get_ref().bundle.clone();
        let fit = unary!(self, request, |a, ctx| a
            .largest_fit_for(&ctx, &bundle)
            .await)?;
        Ok(Response::new(pb::LargestFitForResponse {
            fit: fit.map(Into::into),
        }))
    }

    async fn in_use(
        &self,
        request: Request<pb::InUseRequest>,
    ) -> Result<Response<pb::InUseReport>, Status> {
        let r = unary!(self, request, |a, ctx| a.in_use(&ctx).await)?;
        Ok(Response::new(r.into()))
    }

    async fn apply(
        &self,
        request: Request<pb::BundlePlan>,
    ) -> Result<Response<pb::BundleHandle>, Status> {
        let plan: h::BundlePlan = conv(request.get_ref().clone())?;
        let r = unary!(self, request, |a, ctx| a.apply(&ctx, &plan).await)?;
        Ok(Response::new(r.into()))
    }

    async fn observe(
        &self,
        request: Request<pb::BundleRef>,
    ) -> Result<Response<pb::ObservedBundle>, Status> {
        let bundle: h::BundleRef = conv(request.get_ref().clone())?;
        let r = unary!(self, request, |a, ctx| a.observe(&ctx, &bundle).await)?;
        Ok(Response::new(r.into()))
    }

    async fn stop(
        &self,
        request: Request<pb::BundleRef>,
    ) -> Result<Response<pb::StopResponse>, Status> {
        let bundle: h::BundleRef = conv(request.get_ref().clone())?;
        unary!(self, request, |a, ctx| a.stop(&ctx, &bundle).await)?;
        Ok(Response::new(pb::StopResponse {}))
    }

    async fn destroy(
        &self,
        request: Request<pb::DestroyRequest>,
    ) -> Result<Response<pb::DestroyResponse>, Status> {
        let m = request.get_ref().clone();
        let bundle: h::BundleRef = req(m.bundle, "DestroyRequest.bundle")?;
        // Unset options are the host's default: keep the volumes.
        let options: h::DestroyOptions = match m.options {
            Some(o) => conv(o)?,
            None => h::DestroyOptions::default(),
        };
        unary!(self, request, |a, ctx| a
            .destroy(&ctx, &bundle, options)
            .await)?;
        Ok(Response::new(pb::DestroyResponse {}))
    }

    async fn usage(
        &self,
        request: Request<pb::BundleRef>,
    ) -> Result<Response<pb::BundleUsage>, Status> {
        let bundle: h::BundleRef = conv(request.get_ref().clone())?;
        let r = unary!(self, request, |a, ctx| a.usage(&ctx, &bundle).await)?;
        Ok(Response::new(r.into()))
    }

    async fn create_volume(
        &self,
        request: Request<pb::VolumeRequest>,
    ) -> Result<Response<pb::VolumeHandle>, Status> {
        let v: h::VolumeRequest = conv(request.get_ref().clone())?;
        let r = unary!(self, request, |a, ctx| a.create_volume(&ctx, &v).await)?;
        Ok(Response::new(r.into()))
    }

    async fn destroy_volume(
        &self,
        request: Request<pb::VolumeHandle>,
    ) -> Result<Response<pb::DestroyVolumeResponse>, Status> {
        let v: h::VolumeHandle = conv(request.get_ref().clone())?;
        unary!(self, request, |a, ctx| a.destroy_volume(&ctx, &v).await)?;
        Ok(Response::new(pb::DestroyVolumeResponse {}))
    }

    type SnapshotVolumeStream = Out<pb::Chunk>;

    async fn snapshot_volume(
        &self,
        request: Request<pb::VolumeHandle>,
    ) -> Result<Response<Self::SnapshotVolumeStream>, Status> {
        let v: h::VolumeHandle = conv(request.get_ref().clone())?;
        let a = self.adapters.pick(request.metadata())?.clone();
        let ctx = call::context(request.metadata(), true);
        let channel = self.channels.open(request.metadata()).await?;
        Ok(Response::new(streams::writer_call(
            ctx,
            channel,
            move |ctx, w| async move { a.snapshot_volume(&ctx, &v, w).await.map(|_| ()) },
        )))
    }

    async fn restore_volume(
        &self,
        request: Request<Streaming<pb::RestoreVolumeRequest>>,
    ) -> Result<Response<pb::RestoreVolumeResponse>, Status> {
        let a = self.adapters.pick(request.metadata())?.clone();
        let ctx = call::context(request.metadata(), true);
        let channel = self.channels.open(request.metadata()).await?;
        let mut incoming = request.into_inner();
        let first = incoming.message().await?;
        let volume: h::VolumeHandle = match first.and_then(|m| m.part) {
            Some(pb::restore_volume_request::Part::Volume(v)) => conv(v)?,
            _ => {
                return Err(status::invalid(crate::convert::Invalid(
                    "RestoreVolume's first message must name the volume".into(),
                )));
            }
        };
        let reader = streams::reader(incoming, channel, |m: pb::RestoreVolumeRequest| {
            match m.part {
                Some(pb::restore_volume_request::Part::Data(d)) => Ok(d),
                _ => Err("a RestoreVolume message after the first carries data only".to_string()),
            }
        });
        call::run(ctx, move |ctx| async move {
            a.restore_volume(&ctx, &volume, reader).await
        })
        .await?;
        Ok(Response::new(pb::RestoreVolumeResponse {}))
    }

    async fn has_image(
        &self,
        request: Request<pb::HasImageRequest>,
    ) -> Result<Response<pb::HasImageResponse>, Status> {
        let image = request.get_ref().image.clone();
        let present = unary!(self, request, |a, ctx| a.has_image(&ctx, &image).await)?;
        Ok(Response::new(pb::HasImageResponse { present }))
    }

    async fn import_image(
        &self,
        request: Request<Streaming<pb::Chunk>>,
    ) -> Result<Response<pb::ImportImageResponse>, Status> {
        let a = self.adapters.pick(request.metadata())?.clone();
        let ctx = call::context(request.metadata(), true);
        let channel = self.channels.open(request.metadata()).await?;
        let reader = streams::reader(request.into_inner(), channel, |c: pb::Chunk| Ok(c.data));
        let image = call::run(
            ctx,
            move |ctx| async move { a.import_image(&ctx, reader).await },
        )
        .await?;
        Ok(Response::new(pb::ImportImageResponse { image }))
    }

    type LogsStream = Out<pb::Chunk>;

    async fn logs(
        &self,
        request: Request<pb::LogsRequest>,
    ) -> Result<Response<Self::LogsStream>, Status> {
        let m = request.get_ref().clone();
        let workload: h::WorkloadRef = req(m.workload, "LogsRequest.workload")?;
        let options: h::LogOptions = req(m.options, "LogsRequest.options")?;
        // Opened before the answer's headers go out, so that a log that
        // cannot be read fails the call itself, not a stream already begun.
        let stream = unary!(self, request, true, |a, ctx| {
            a.logs(&ctx, &workload, &options).await
        })?;
        let channel = self.channels.open(request.metadata()).await?;
        Ok(opened(Response::new(streams::bytes(stream, channel))))
    }

    type ExecStream = Out<pb::ExecServerMessage>;

    async fn exec(
        &self,
        request: Request<Streaming<pb::ExecClientMessage>>,
    ) -> Result<Response<Self::ExecStream>, Status> {
        let a = self.adapters.pick(request.metadata())?.clone();
        let ctx = call::context(request.metadata(), true);
        let incoming = request.into_inner();
        Ok(opened(Response::new(
            crate::exec::session(a, ctx, incoming).await?,
        )))
    }

    type RunStream = Out<pb::Chunk>;

    async fn run(
        &self,
        request: Request<pb::RunCallRequest>,
    ) -> Result<Response<Self::RunStream>, Status> {
        let m = request.get_ref().clone();
        let workload: h::WorkloadRef = req(m.workload, "RunCallRequest.workload")?;
        let run: h::RunRequest = req(m.request, "RunCallRequest.request")?;
        let a = self.adapters.pick(request.metadata())?.clone();
        let ctx = call::context(request.metadata(), true);
        let channel = self.channels.open(request.metadata()).await?;
        Ok(Response::new(streams::writer_call(
            ctx,
            channel,
            move |ctx, w| async move { a.run(&ctx, &workload, &run, w).await.map(|_| ()) },
        )))
    }

    async fn trial(
        &self,
        request: Request<pb::TrialRequest>,
    ) -> Result<Response<pb::TrialResult>, Status> {
        let t: h::TrialRequest = conv(request.get_ref().clone())?;
        let r = unary!(self, request, |a, ctx| a.trial(&ctx, &t).await)?;
        Ok(Response::new(r.into()))
    }

    async fn upstream(
        &self,
        request: Request<pb::UpstreamRequest>,
    ) -> Result<Response<pb::UpstreamAddress>, Status> {
        let m = request.get_ref().clone();
        let workload: h::WorkloadRef = req(m.workload, "UpstreamRequest.workload")?;
        let port =
            crate::convert::u16_from(m.port, "UpstreamRequest.port").map_err(status::invalid)?;
        let r = unary!(self, request, |a, ctx| a
            .upstream(&ctx, &workload, port)
            .await)?;
        Ok(Response::new(r.into()))
    }

    type WatchBundlesStream = Out<pb::WatchBundlesMessage>;

    async fn watch_bundles(
        &self,
        request: Request<pb::WatchBundlesRequest>,
    ) -> Result<Response<Self::WatchBundlesStream>, Status> {
        let a = self.adapters.pick(request.metadata())?.clone();
        let ctx = call::context(request.metadata(), true);
        Ok(Response::new(streams::watch(a, ctx)))
    }

    async fn apply_edge(
        &self,
        request: Request<pb::EdgePlan>,
    ) -> Result<Response<pb::ApplyEdgeResponse>, Status> {
        let plan: h::EdgePlan = conv(request.get_ref().clone())?;
        unary!(self, request, |a, ctx| a.apply_edge(&ctx, &plan).await)?;
        Ok(Response::new(pb::ApplyEdgeResponse {}))
    }

    async fn observe_edge(
        &self,
        request: Request<pb::ObserveEdgeRequest>,
    ) -> Result<Response<pb::EdgeState>, Status> {
        let name = request.get_ref().name.clone();
        let r = unary!(self, request, |a, ctx| a.observe_edge(&ctx, &name).await)?;
        Ok(Response::new(r.into()))
    }

    async fn remove_edge(
        &self,
        request: Request<pb::RemoveEdgeRequest>,
    ) -> Result<Response<pb::RemoveEdgeResponse>, Status> {
        let name = request.get_ref().name.clone();
        unary!(self, request, |a, ctx| a.remove_edge(&ctx, &name).await)?;
        Ok(Response::new(pb::RemoveEdgeResponse {}))
    }

    async fn edges(
        &self,
        request: Request<pb::EdgesRequest>,
    ) -> Result<Response<pb::EdgesResponse>, Status> {
        let names = unary!(self, request, |a, ctx| a.edges(&ctx).await)?;
        Ok(Response::new(pb::EdgesResponse { names }))
    }

    async fn edge_volumes(
        &self,
        request: Request<pb::EdgeVolumesRequest>,
    ) -> Result<Response<pb::EdgeVolumesResponse>, Status> {
        let v = unary!(self, request, |a, ctx| a.edge_volumes(&ctx).await)?;
        Ok(Response::new(pb::EdgeVolumesResponse {
            volumes: v.into_iter().map(Into::into).collect(),
        }))
    }
}
