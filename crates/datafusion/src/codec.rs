//! [`RayquetCodec`]: how a [`RayquetScanExec`] travels between processes (datafusion-proto's
//! `PhysicalExtensionCodec`). What travels is the scan's [`ScanSpec`] as JSON (table name,
//! format plan, limit, schema; no credentials) and the feed's id; the receiving process
//! rebuilds the node with its own [`ScanOptions`] (its environment's stores and credentials,
//! its pools and budget), which the codec instance of that process holds.
//!
//! Invariants: encoding never includes the options of the process that encodes; decoding
//! bytes from the wire ends in a node or an error, never a panic, and no count they claim
//! (partitions) sizes anything before it is checked.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_distributed::{WorkUnitFeed, WorkUnitFeedProto};
use datafusion_proto::physical_plan::PhysicalExtensionCodec;
use datafusion_proto::protobuf::proto_error;
use prost::Message;
use rayquet::ScanOptions;

use crate::exec::RayquetScanExec;
use crate::feed::Planner;
use crate::remote::Remote;
use crate::spec::ScanSpec;

/// The most partitions a decoded node may claim (DataFusion plans one per core, or per
/// target partition).
const MAX_PARTITIONS: u64 = 1 << 16;

/// The node on the wire.
#[derive(Clone, PartialEq, ::prost::Message)]
struct ScanNode {
    /// [`ScanSpec`] as JSON.
    #[prost(bytes = "vec", tag = "1")]
    spec: Vec<u8>,
    #[prost(uint64, tag = "2")]
    partitions: u64,
    #[prost(message, optional, tag = "3")]
    feed: Option<WorkUnitFeedProto>,
}

/// Encodes rayquet scan nodes, and decodes them with this process's options (see the module
/// docs). Register it on both sides: the coordinator's session and every worker's.
#[derive(Debug, Clone, Default)]
pub struct RayquetCodec {
    options: ScanOptions,
    /// On a worker: its counters and the roots its units must read under.
    remote: Option<Remote>,
}

impl RayquetCodec {
    /// A codec that rebuilds nodes with `options` (this process's stores, pools, budget).
    pub fn new(options: ScanOptions) -> Self {
        RayquetCodec {
            options,
            remote: None,
        }
    }

    /// The nodes this process rebuilds count their units and rows, and check their units'
    /// paths, as `remote` says (a worker's).
    pub(crate) fn with_remote(mut self, remote: Remote) -> Self {
        self.remote = Some(remote);
        self
    }
}

impl PhysicalExtensionCodec for RayquetCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        _inputs: &[Arc<dyn ExecutionPlan>],
        _ctx: &TaskContext,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let node = ScanNode::decode(buf).map_err(|e| proto_error(e.to_string()))?;
        let spec: ScanSpec = serde_json::from_slice(&node.spec)
            .map_err(|e| proto_error(format!("a rayquet scan node does not decode: {e}")))?;
        let feed = node
            .feed
            .ok_or_else(|| proto_error("a rayquet scan node without its work unit feed"))?;
        let feed = WorkUnitFeed::<Planner>::from_proto(feed)?;
        // A count from the wire: checked before DataFusion sizes anything by it.
        if node.partitions > MAX_PARTITIONS {
            return Err(proto_error(format!(
                "a rayquet scan node claims {} partitions (at most {MAX_PARTITIONS})",
                node.partitions
            )));
        }
        Ok(Arc::new(RayquetScanExec::new(
            spec,
            feed,
            node.partitions as usize,
            self.options.clone(),
            None,
            self.remote.clone(),
            0,
        )))
    }

    fn try_encode(&self, node: Arc<dyn ExecutionPlan>, buf: &mut Vec<u8>) -> Result<()> {
        let Some(scan) = node.downcast_ref::<RayquetScanExec>() else {
            return Err(proto_error(format!(
                "RayquetCodec cannot encode {}",
                node.name()
            )));
        };
        let spec =
            serde_json::to_vec(scan.spec.as_ref()).map_err(|e| proto_error(e.to_string()))?;
        ScanNode {
            spec,
            partitions: scan.properties().partitioning.partition_count() as u64,
            feed: Some(scan.feed.to_proto()),
        }
        .encode(buf)
        .map_err(|e| proto_error(e.to_string()))
    }
}
