//! The builder of a [`Walk`]: the user's settings, resolved by
//! [`WalkBuilder::build`] into a [`Config`].

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

use crate::config::{Config, Engine, Resolved, UringUnavailable};
use crate::filter::{EntryFilter, FilterEntry};
use crate::node::FdBudget;
use crate::sort::SortBy;
use crate::sys;
use crate::timestamp::TimeField;
use crate::totals::Progress;
use crate::uring;
use crate::walk::Walk;
use walk_ignore_rules::IgnoreRules;

mod order;
mod reach;

/// Settings of a walk.
///
/// # Example
///
/// ```
/// use traverse::{Engine, WalkBuilder};
/// let walk = WalkBuilder::new()
///     .engine(Engine::Threads)
///     .count_links(true)
///     .one_file_system(true)
///     .build();
/// assert_eq!(walk.engine(), Engine::Threads);
/// ```
#[derive(Clone, Debug)]
pub struct WalkBuilder {
    engine: Engine,
    jobs: Option<usize>,
    count_links: bool,
    count_once: bool,
    one_file_system: bool,
    list: bool,
    list_metadata: bool,
    modification_times: bool,
    latest_time: Option<TimeField>,
    inode_order: Option<usize>,
    interrupt: Option<Arc<AtomicBool>>,
    exclude: Vec<Glob>,
    /// The patterns of `exclude` as one matcher.
    exclude_set: Option<Arc<GlobSet>>,
    filter: Option<EntryFilter>,
    max_depth: Option<usize>,
    min_depth: usize,
    follow_links: bool,
    follow_root_links: bool,
    sort: Option<SortBy>,
    contents_first: bool,
    ignore: Option<IgnoreRules>,
}

impl Default for WalkBuilder {
    fn default() -> WalkBuilder {
        WalkBuilder::new()
    }
}

/// GNU fts sorts a directory by inode number above this many entries.
const INODE_ORDER_THRESHOLD: usize = 10_000;

impl WalkBuilder {
    /// Defaults: [`Engine::Auto`], jobs chosen per engine, hard links once,
    /// crossing filesystems, totals (not a listing), inode order above
    /// 10 000 entries.
    pub fn new() -> WalkBuilder {
        WalkBuilder {
            engine: Engine::Auto,
            jobs: None,
            count_links: false,
            count_once: false,
            one_file_system: false,
            list: false,
            list_metadata: false,
            modification_times: false,
            latest_time: None,
            inode_order: Some(INODE_ORDER_THRESHOLD),
            interrupt: None,
            exclude: Vec::new(),
            exclude_set: None,
            filter: None,
            max_depth: None,
            min_depth: 0,
            follow_links: false,
            follow_root_links: false,
            sort: None,
            contents_first: false,
            ignore: None,
        }
    }

    /// The engine.
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn engine(mut self, engine: Engine) -> WalkBuilder {
        self.engine = engine;
        self
    }

    /// Worker threads (`threads`, `tokio`, and `uring`, each with its own
    /// ring); `std` always uses one. Capped so that every worker's
    /// descriptors fit in `ulimit -n`. Without it, the threads engine
    /// starts with one thread per CPU and adds threads (up to 16 per CPU)
    /// while its work waits for the disk; the uring engine likewise, up to
    /// 4 per CPU (8 on a kernel without GETDENTS).
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn jobs(mut self, jobs: usize) -> WalkBuilder {
        self.jobs = Some(jobs.max(1));
        self
    }

    /// Count the size of a hard-linked inode for every link (`du -l`).
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn count_links(mut self, yes: bool) -> WalkBuilder {
        self.count_links = yes;
        self
    }

    /// With several roots walked by [`Walk::run_next`] (or
    /// [`Walk::run_dirs`]): count every directory once across them, as
    /// `du A B` counts every inode once across its arguments. A directory
    /// counted under an earlier root (the same root twice, or a root inside
    /// an earlier one) is neither counted nor descended into again, and a
    /// root counted before gives a [`Summary`](crate::Summary) marked
    /// [`repeated`](crate::Summary::repeated) with nothing counted. Each
    /// directory's identity is kept until [`Walk::run`] starts afresh (16
    /// bytes a directory). No effect on a listing, which lists every path
    /// as `find A B` does.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// std::fs::create_dir(dir.path().join("sub"))?;
    /// std::fs::write(dir.path().join("sub/f"), b"12345")?;
    /// let walk = traverse::WalkBuilder::new().count_once(true).build();
    /// let sub = walk.run(&dir.path().join("sub"), &traverse::Ignore);
    /// let all = walk.run_next(dir.path(), &traverse::Ignore);
    /// // `sub` is not counted again under its parent.
    /// assert_eq!(all.totals.dirs, 1);
    /// assert_eq!(sub.totals.files + all.totals.files, 1);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    ///
    /// [`Walk::run_next`]: crate::Walk::run_next
    /// [`Walk::run_dirs`]: crate::Walk::run_dirs
    /// [`Walk::run`]: crate::Walk::run
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn count_once(mut self, yes: bool) -> WalkBuilder {
        self.count_once = yes;
        self
    }

    /// Skip entries on another filesystem than the root's (`du -x`).
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn one_file_system(mut self, yes: bool) -> WalkBuilder {
        self.one_file_system = yes;
        self
    }

    /// Listing mode: hand every entry to [`Visitor::visit_entry`](crate::Visitor::visit_entry) and stat an
    /// entry only when its directory entry has no type (or, with
    /// [`one_file_system`](Self::one_file_system), when it is a
    /// directory). The totals then hold counts but no sizes.
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn list(mut self, yes: bool) -> WalkBuilder {
        self.list = yes;
        self
    }

    /// With [`list`](Self::list): stat every listed entry (one `statx`
    /// each, as without `list`) and hand its [`Metadata`](crate::Metadata)
    /// to the visitor in [`Entry::metadata`](crate::Entry::metadata); the
    /// totals then hold sizes too.
    ///
    /// ```
    /// use traverse::{Event, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("a"), b"hello")?;
    /// let walk = WalkBuilder::new().list(true).list_metadata(true).build();
    /// let mut sizes = Vec::new();
    /// let summary = walk.run_with(dir.path(), |event| {
    ///     if let Event::Entry(e) = event {
    ///         let meta = e.metadata().expect("every entry is stat'ed");
    ///         sizes.push((e.depth(), meta.is_file(), meta.len()));
    ///     }
    /// });
    /// sizes.sort();
    /// assert_eq!(sizes[1], (1, true, 5));
    /// assert!(summary.totals.bytes >= 5);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn list_metadata(mut self, yes: bool) -> WalkBuilder {
        self.list_metadata = yes;
        self
    }

    /// Ask every `statx` for the modification time too, which the ncdu
    /// tree of [`Walk::run_dirs`](crate::Walk::run_dirs) then records
    /// (ncdu's `mtime` field, what the browser sorts by). Off by default:
    /// on NFS, asking for times makes the client write back a file's
    /// pending writes first.
    ///
    /// ```
    /// let walk = traverse::WalkBuilder::new().modification_times(true).build();
    /// assert!(walk.totals(std::path::Path::new(".")).totals.dirs >= 1);
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn modification_times(mut self, yes: bool) -> WalkBuilder {
        self.modification_times = yes;
        self
    }

    /// Keep the latest of one of every entry's times in the totals
    /// ([`Totals::latest`](crate::Totals::latest), and per directory in
    /// [`DirTotals`](crate::DirTotals)): what `du --time` prints. Every
    /// `statx` then asks for that time too. `None` (the default): none.
    ///
    /// ```
    /// use traverse::{TimeField, WalkBuilder};
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("f"), b"x")?;
    /// let walk = WalkBuilder::new().latest_time(Some(TimeField::Modification)).build();
    /// let latest = walk.totals(dir.path()).totals.latest.unwrap();
    /// let newest = std::fs::metadata(dir.path())?.modified()?;
    /// assert!(latest.system_time() >= newest);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn latest_time(mut self, field: Option<TimeField>) -> WalkBuilder {
        self.latest_time = field;
        self
    }

    /// Stat the entries of directories with more than `threshold` entries
    /// in inode order (`None`: directory order). Helps cold caches on
    /// filesystems that lay inodes out in order. The `threads` engine sorts
    /// only when the first entries it stats block (a cold cache); on a warm
    /// one the sort would only cost CPU.
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn inode_order(mut self, threshold: Option<usize>) -> WalkBuilder {
        self.inode_order = threshold;
        self
    }

    /// A flag that stops the walk when set (a SIGINT handler sets it);
    /// the summary is then marked partial.
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn interrupt(mut self, flag: Arc<AtomicBool>) -> WalkBuilder {
        self.interrupt = Some(flag);
        self
    }

    /// Leaves out every entry whose name matches the shell pattern
    /// `pattern` (`*`, `?`, `[...]`, as `du --exclude` takes them): it is
    /// neither counted nor descended into. The pattern is matched against
    /// names, never against the root given to the walk. An invalid pattern
    /// is an error naming it.
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("a.o"), b"12345")?;
    /// std::fs::write(dir.path().join("a.c"), b"1")?;
    /// let walk = traverse::WalkBuilder::new().exclude("*.o")?.build();
    /// assert_eq!(walk.totals(dir.path()).totals.files, 1);
    /// assert!(traverse::WalkBuilder::new().exclude("[z").is_err());
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn exclude(mut self, pattern: &str) -> std::io::Result<WalkBuilder> {
        let invalid = |e: globset::Error| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("invalid pattern {pattern:?}: {}", e.kind()),
            )
        };
        let glob = GlobBuilder::new(pattern)
            .backslash_escape(true)
            .build()
            .map_err(invalid)?;
        let mut set = GlobSetBuilder::new();
        for glob in self.exclude.iter().chain([&glob]) {
            set.add(glob.clone());
        }
        self.exclude_set = Some(Arc::new(set.build().map_err(invalid)?));
        self.exclude.push(glob);
        Ok(self)
    }

    /// Leaves out every entry for which `filter` returns false: it is
    /// neither counted nor listed nor, if a directory, descended into (the
    /// subtree is pruned), like a name given to [`exclude`](Self::exclude).
    /// `filter` sees each entry below the root ([`FilterEntry`]: name,
    /// type from the directory entry, depth) before the walk stats it,
    /// from every worker at once. A later call replaces the filter.
    ///
    /// ```
    /// use traverse::{FileType, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::create_dir_all(dir.path().join(".git/objects"))?;
    /// std::fs::write(dir.path().join(".git/objects/pack"), b"1234")?;
    /// std::fs::write(dir.path().join("main.rs"), b"12")?;
    /// std::fs::write(dir.path().join(".hidden"), b"1")?;
    ///
    /// // Skip hidden entries, and everything below them.
    /// let walk = WalkBuilder::new()
    ///     .filter_entry(|entry| !entry.name().as_encoded_bytes().starts_with(b"."))
    ///     .build();
    /// let totals = walk.totals(dir.path()).totals;
    /// assert_eq!((totals.dirs, totals.files), (1, 1));
    ///
    /// // Regular files at depth 1 only, every directory.
    /// let walk = WalkBuilder::new()
    ///     .filter_entry(|e| e.file_type() != FileType::Regular || e.depth() == 1)
    ///     .build();
    /// assert_eq!(walk.totals(dir.path()).totals.files, 2);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn filter_entry<F>(mut self, filter: F) -> WalkBuilder
    where
        F: Fn(&FilterEntry<'_>) -> bool + Send + Sync + 'static,
    {
        self.filter = Some(EntryFilter::new(filter));
        self
    }

    /// Leaves out what `rules` say, as ripgrep and fd do: hidden entries,
    /// and what `.ignore`, `.gitignore` and git's global excludes name
    /// (the `ignore` crate's matcher), like a name given to
    /// [`exclude`](Self::exclude): neither counted nor listed nor
    /// descended into. Each directory's ignore files are read once, before
    /// its entries are decided on.
    ///
    /// ```
    /// use traverse::{IgnoreRules, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join(".ignore"), "*.o\n")?;
    /// std::fs::write(dir.path().join("a.o"), b"12345")?;
    /// std::fs::write(dir.path().join("a.c"), b"1")?;
    /// let walk = WalkBuilder::new().ignore_rules(IgnoreRules::new()).build();
    /// // `a.c`: `a.o` is ignored, `.ignore` hidden.
    /// assert_eq!(walk.totals(dir.path()).totals.files, 1);
    /// # Ok::<_, std::io::Error>(())
    /// ```
    #[must_use = "a setter returns the changed builder, which does nothing until built"]
    pub fn ignore_rules(mut self, rules: IgnoreRules) -> WalkBuilder {
        self.ignore = Some(rules);
        self
    }

    /// Resolves the engine (`auto`, and `uring` without io_uring) and the
    /// number of jobs.
    pub fn build(&self) -> Walk {
        let (engine, fallback) = match self.engine {
            Engine::Auto if uring::readdirplus() => (Resolved::Uring, None),
            Engine::Auto | Engine::Threads => (Resolved::Threads, None),
            Engine::Uring => match uring::available() {
                Ok(()) => (Resolved::Uring, None),
                Err(why) => (Resolved::Threads, Some(UringUnavailable::Ring(why))),
            },
            #[cfg(feature = "reference-engines")]
            Engine::Tokio => (Resolved::Tokio, None),
            #[cfg(feature = "reference-engines")]
            Engine::Std => (Resolved::Std, None),
        };
        let limit = sys::open_file_limit();
        let cap = FdBudget::max_jobs(limit);
        let (jobs, max_jobs) = match (engine, self.jobs) {
            #[cfg(feature = "reference-engines")]
            (Resolved::Std, _) => (1, 1),
            (_, Some(jobs)) => (jobs, jobs),
            // Start at the warm-cache optimum and let the walk add threads
            // while it waits for the disk.
            (Resolved::Threads, None) => (cores(), cores() * COLD_THREADS_PER_CORE),
            (Resolved::Uring, None) => (cores(), cores() * uring::max_walkers_per_core()),
            #[cfg(feature = "reference-engines")]
            (Resolved::Tokio, None) => (cores(), cores()),
        };
        let (jobs, max_jobs) = (jobs.min(cap), max_jobs.min(cap));
        Walk {
            config: Config {
                engine,
                jobs,
                max_jobs,
                count_links: self.count_links,
                count_once: self.count_once && !self.list,
                one_file_system: self.one_file_system,
                list: self.list,
                list_metadata: self.list_metadata,
                modification_times: self.modification_times,
                latest_time: self.latest_time,
                inode_order: self.inode_order,
                exclude: self.exclude_set.clone(),
                filter: self.filter.clone(),
                max_depth: self.max_depth,
                min_depth: self.min_depth,
                follow_links: self.follow_links,
                follow_root_links: self.follow_root_links || self.follow_links,
                sort: self.sort.clone(),
                contents_first: self.contents_first,
                ignore: self.ignore,
            },
            fallback,
            limit,
            interrupt: self.interrupt.clone().unwrap_or_default(),
            seen: Mutex::new(HashSet::new()),
            dirs_seen: Mutex::default(),
            files_seen: Mutex::default(),
            skipped: Mutex::default(),
            reached: crate::engine::Shared::reach_set(),
            mount_names: Mutex::default(),
            progress: Arc::new(Progress::default()),
            spares: Arc::default(),
        }
    }
}

/// The number of CPUs: the threads engine's best start on a warm cache.
fn cores() -> usize {
    crate::sys::cpus()
}

/// Threads per CPU the threads engine may grow to on a cold cache (on 2
/// CPUs, 32 threads read a cold Linux source tree 3 times faster than 2:
/// many requests in flight let the disk and the kernel overlap them).
const COLD_THREADS_PER_CORE: usize = 16;
