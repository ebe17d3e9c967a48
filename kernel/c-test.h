/* SPDX-License-Identifier: MIT */
/*
 * What kernel/getdents-test.c, kernel/getdents-liburing-test.c,
 * kernel/nowait-test.c and kernel/cancel-test.c share: the rule for a
 * kernel without GETDENTS, removing their scratch tree, and the lines they
 * print in the format of Rust's test harness, which .ci/run sums with the
 * Rust suites ("test NAME ... ok", "test result: ok. N passed; M failed;
 * ..."). The three without liburing also share a minimal raw ring; the
 * liburing test defines C_TEST_LIBURING to leave it out. Included once per
 * program, after the system headers.
 */
#ifndef GETDENTS_C_TEST_H
#define GETDENTS_C_TEST_H

/*
 * The lock of the tests that drop caches or mount (exclusive) and of those
 * that expect caches warm (shared), in every suite that test-vm runs side
 * by side: these, io-uring's kernel_plus.rs and traverse's uring.rs.
 */
#define CACHE_LOCK	"/tmp/getdents-dcache.lock"

/*
 * The running kernel lacks GETDENTS (opcode): a failure where
 * IO_URING_GETDENTS_REQUIRE=1 (the test VM), which returns 1, else a skip,
 * which returns 0. Prints which.
 */
static int getdents_missing(int opcode)
{
	const char *require = getenv("IO_URING_GETDENTS_REQUIRE");

	if (require && !strcmp(require, "1")) {
		fprintf(stderr, "IO_URING_GETDENTS_REQUIRE=1 but opcode %d is not the kernel's last\n",
			opcode);
		return 1;
	}
	printf("skipped: no IORING_OP_GETDENTS (%d) on this kernel\n", opcode);
	return 0;
}

/*
 * The type of fd's filesystem (statfs's f_type), 0 if fstatfs fails.
 * Unsigned: btrfs's magic number is negative in an i386 build's f_type.
 */
static inline unsigned int fs_magic(int fd)
{
	struct statfs sfs;

	return fstatfs(fd, &sfs) ? 0 : (unsigned int)sfs.f_type;
}

/*
 * Whether fd is on a filesystem whose inline reads may stop short, before
 * a block that is not cached (ext4, XFS) or a tree block that is not cached
 * or is locked (btrfs). The last record of such a read carries the
 * position where it stopped, at or before the next record's d_off
 * (kernel/README.md, "A short read's last d_off").
 */
static inline int short_reads_possible(int fd)
{
	unsigned int type = fs_magic(fd);

	return type == EXT4_SUPER_MAGIC || type == XFS_SUPER_MAGIC ||
	       type == BTRFS_SUPER_MAGIC;
}

/*
 * Whether a record whose d_off is got_off may stand for the reference's,
 * whose d_off is want_off, all else being equal: only where it ended a
 * read that may have stopped short, at a position not after want_off.
 */
static inline int short_read_d_off(int short_ok, int ends_read,
				   int64_t got_off, int64_t want_off)
{
	return short_ok && ends_read && got_off <= want_off;
}

/* Removes everything below the directory dfd (and closes dfd). */
static void remove_tree(int dfd)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (e->d_type == DT_DIR) {
			int sub = openat(dirfd(d), e->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

			if (sub >= 0)
				remove_tree(sub);
			unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
		} else {
			unlinkat(dirfd(d), e->d_name, 0);
		}
	}
	closedir(d);
}

/* An entry of a program's table of tests: fn returns 0 when it passed. */
struct c_test {
	const char *name;
	int (*fn)(void);
};

/* One test's line; counts it in *passed or *failed. */
static void report_test(const char *name, int failed_now, const char *why,
			int *passed, int *failed)
{
	if (failed_now) {
		printf("test %s ... FAILED: %s\n", name, why);
		(*failed)++;
	} else {
		printf("test %s ... ok\n", name);
		(*passed)++;
	}
}

/* The closing line, timed from t0 (CLOCK_MONOTONIC). */
static void report_result(int passed, int failed, const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("\ntest result: %s. %d passed; %d failed; 0 ignored; 0 measured; 0 filtered out; finished in %.2fs\n",
	       failed ? "FAILED" : "ok", passed, failed,
	       (t1.tv_sec - t0->tv_sec) + (t1.tv_nsec - t0->tv_nsec) / 1e9);
}

#ifndef C_TEST_LIBURING
/*
 * Debian 12's headers predate the patch: kernel/test-vm passes the
 * series' number (65: after IORING_OP_URING_CMD128 of Linux 7.3).
 */
#ifndef OP_GETDENTS
#define OP_GETDENTS	65
#endif

/*
 * A minimal raw ring. Its helpers are static inline: a program that does
 * not use one gets no warning for it.
 */
struct ring {
	int fd;
	unsigned int *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

/* Sets up a ring of entries SQEs with setup_flags (IORING_SETUP_*). */
static inline int ring_init(struct ring *r, unsigned int entries,
			    unsigned int setup_flags)
{
	struct io_uring_params p;
	size_t sq_len, cq_len;
	char *sq, *cq;

	memset(&p, 0, sizeof(p));
	p.flags = setup_flags;
	r->fd = syscall(__NR_io_uring_setup, entries, &p);
	if (r->fd < 0)
		return -errno;
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		  r->fd, IORING_OFF_SQ_RING);
	cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		  r->fd, IORING_OFF_CQ_RING);
	r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		       IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || r->sqes == MAP_FAILED)
		return -errno;
	r->sq_tail = (unsigned int *)(sq + p.sq_off.tail);
	r->sq_mask = (unsigned int *)(sq + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)(sq + p.sq_off.array);
	r->cq_head = (unsigned int *)(cq + p.cq_off.head);
	r->cq_tail = (unsigned int *)(cq + p.cq_off.tail);
	r->cq_mask = (unsigned int *)(cq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	return 0;
}

/* The next free SQE, zeroed and queued; the caller fills it, then enters. */
static inline struct io_uring_sqe *get_sqe(struct ring *r)
{
	unsigned int tail = *r->sq_tail;
	unsigned int idx = tail & *r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[idx];

	memset(sqe, 0, sizeof(*sqe));
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	return sqe;
}

/* The next free SQE as a GETDENTS of fd, len bytes into buf from off. */
static inline struct io_uring_sqe *getdents_sqe(struct ring *r, int fd,
						void *buf, unsigned int len,
						int64_t off)
{
	struct io_uring_sqe *sqe = get_sqe(r);

	sqe->opcode = OP_GETDENTS;
	sqe->fd = fd;
	sqe->addr = (uintptr_t)buf;
	sqe->len = len;
	sqe->off = (uint64_t)off;
	return sqe;
}

/* io_uring_enter(2); returns its result, or -errno. */
static inline int ring_enter(struct ring *r, unsigned int submit,
			     unsigned int wait, unsigned int flags)
{
	int ret = syscall(__NR_io_uring_enter, r->fd, submit, wait, flags,
			  NULL, 0);

	return ret < 0 ? -errno : ret;
}

/* Takes one completion if there is one; returns 0 if there was none. */
static inline int peek_cqe(struct ring *r, struct io_uring_cqe *out)
{
	unsigned int head = *r->cq_head;

	if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		return 0;
	*out = r->cqes[head & *r->cq_mask];
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return 1;
}

/* Takes one completion, waiting for it if needed; 0, or -errno. */
static inline int wait_cqe(struct ring *r, struct io_uring_cqe *out)
{
	while (!peek_cqe(r, out)) {
		int ret = ring_enter(r, 0, 1, IORING_ENTER_GETEVENTS);

		if (ret < 0 && ret != -EINTR)
			return ret;
	}
	return 0;
}

/* GETDENTS is the last opcode the probe lists, and it is OP_GETDENTS. */
static inline int getdents_available(const struct ring *r)
{
	size_t len = sizeof(struct io_uring_probe) +
		     256 * sizeof(struct io_uring_probe_op);
	struct io_uring_probe *probe = calloc(1, len);
	int ok;

	ok = probe && !syscall(__NR_io_uring_register, r->fd,
			       IORING_REGISTER_PROBE, probe, 256) &&
	     probe->last_op == OP_GETDENTS &&
	     (probe->ops[OP_GETDENTS].flags & IO_URING_OP_SUPPORTED);
	free(probe);
	return ok;
}
#endif /* C_TEST_LIBURING */

#endif
