//! The one place that knows every engine: runs the one a walk resolved to.

use std::sync::Arc;

use crate::config::Resolved;
use crate::engine::Shared;
use crate::node::DirNode;
use crate::totals::Accumulator;
use crate::visit::VisitorBuilder;
#[cfg(feature = "reference-engines")]
use crate::{stdfs, tokio_fs};
use crate::{threads, uring};

/// Walks below `root` (already counted) with the engine of `shared`'s
/// configuration; returns what its workers counted.
pub(crate) fn walk(
    shared: &Arc<Shared>,
    root: Arc<DirNode>,
    visitors: &dyn VisitorBuilder,
) -> Accumulator {
    match shared.config.engine {
        Resolved::Threads => threads::walk(shared, root, visitors),
        Resolved::Uring => uring::walk(shared, root, visitors),
        #[cfg(feature = "reference-engines")]
        Resolved::Tokio => tokio_fs::walk(shared, root, visitors),
        #[cfg(feature = "reference-engines")]
        Resolved::Std => stdfs::walk(shared, root, visitors),
    }
}
