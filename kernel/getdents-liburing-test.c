// SPDX-License-Identifier: MIT
/*
 * Description: IORING_OP_GETDENTS through liburing, as liburing's own test
 * suite tests an opcode: an io_uring_prep_getdents() helper on top of
 * io_uring_prep_rw(), each case a function answering T_EXIT_PASS,
 * T_EXIT_SKIP or T_EXIT_FAIL, built against the distribution's liburing
 * (Debian's liburing-dev, linked static by kernel/test-vm).
 *
 * Covers, with and without readdirplus (IORING_GETDENTS_PLUS): the default
 * ring, IOSQE_ASYNC, SQPOLL, DEFER_TASKRUN and a registered (fixed) file,
 * each listing against getdents64(2) and each readdirplus record against
 * fstatat(2); reads chained by d_off while another thread seeks the same
 * file and reads it with getdents64(2); cancellation of a linked read, of
 * reads in io-wq, and a process that exits with reads in flight; and a
 * stress run: readers on their own rings against a thread that creates,
 * renames and removes entries of the same directory, where every entry
 * that is never touched must be listed exactly once by every pass.
 *
 * The directories are made under $TMPDIR (kernel/test-vm runs this on
 * tmpfs, ext4 and XFS). Prints one line per test and a closing line in the
 * format of Rust's test harness, which the CI sums with the other suites;
 * exits 0 when every test passed. Without GETDENTS on the running kernel
 * it exits T_EXIT_SKIP, or fails if IO_URING_GETDENTS_REQUIRE=1.
 * GETDENTS_STRESS_SECONDS sets the stress run's length (default 3).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <linux/magic.h>
#include <liburing.h>

/* liburing has the ring: c-test.h leaves out its raw one. */
#define C_TEST_LIBURING
#include "c-test.h"

#define T_EXIT_PASS	0
#define T_EXIT_FAIL	1
#define T_EXIT_SKIP	77

/*
 * Not in any released uapi: the numbers of the series, the opcode passed
 * by kernel/test-vm (65: after IORING_OP_URING_CMD128 of Linux 7.3).
 */
#ifndef IORING_OP_GETDENTS
#define IORING_OP_GETDENTS	65
#endif
#define IORING_CQE_F_DIR_EOF	(1U << 14)
#define IORING_GETDENTS_PLUS	(1U << 0)
/* After a readdirplus record's name: the error code, a reserved word, the statx. */
#define PLUS_TAIL		(8 + (int)sizeof(struct statx))
#define PLUS_MASK		(STATX_TYPE | STATX_MODE | STATX_INO | STATX_SIZE)

#define MAX_ENTRIES	4096
#define NAME_LEN	256
#define READ_LEN	4096

static inline void io_uring_prep_getdents(struct io_uring_sqe *sqe, int fd,
					  void *buf, unsigned int len,
					  __u64 offset)
{
	io_uring_prep_rw(IORING_OP_GETDENTS, sqe, fd, buf, len, offset);
}

static inline void io_uring_prep_getdents_plus(struct io_uring_sqe *sqe,
					       int fd, void *buf,
					       unsigned int len, __u64 offset,
					       unsigned int statx_mask)
{
	io_uring_prep_getdents(sqe, fd, buf, len, offset);
	sqe->rw_flags = IORING_GETDENTS_PLUS;
	sqe->file_index = statx_mask;
}

struct record {
	uint64_t ino;
	int64_t off;
	unsigned char type;
	unsigned char ends_read;	/* the last record of its read */
	int error;		/* readdirplus only */
	struct statx stx;	/* readdirplus only, when error is 0 */
	char name[NAME_LEN];
};

struct listing {
	int n;
	struct record r[MAX_ENTRIES];
};

/* Why the running test failed; several threads may write it, first wins. */
static char failure[512];
static pthread_mutex_t failure_lock = PTHREAD_MUTEX_INITIALIZER;

static int fail(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&failure_lock);
	if (!failure[0]) {
		va_start(ap, fmt);
		vsnprintf(failure, sizeof(failure), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&failure_lock);
	return T_EXIT_FAIL;
}

/* Appends the records of buf[0..len); plus: readdirplus records. */
static int parse(struct listing *l, const char *buf, int len, int plus)
{
	int pos = 0;

	while (pos < len) {
		const struct dirent64 *d = (const void *)(buf + pos);
		int name_end = (offsetof(struct dirent64, d_name) +
				strnlen(d->d_name, NAME_LEN) + 1 + 7) & ~7;
		struct record *rec;

		if (len - pos < (int)offsetof(struct dirent64, d_name) + 2 ||
		    pos + d->d_reclen > len || d->d_reclen % 8 ||
		    (plus && d->d_reclen != name_end + PLUS_TAIL) ||
		    l->n == MAX_ENTRIES)
			return fail("bad record at byte %d of %d", pos, len);
		rec = &l->r[l->n++];
		rec->ino = d->d_ino;
		rec->off = d->d_off;
		rec->type = d->d_type;
		rec->ends_read = pos + d->d_reclen == len;
		rec->error = 0;
		snprintf(rec->name, sizeof(rec->name), "%s", d->d_name);
		if (plus) {
			memcpy(&rec->error, buf + pos + name_end, 4);
			memcpy(&rec->stx, buf + pos + name_end + 8,
			       sizeof(rec->stx));
		}
		pos += d->d_reclen;
	}
	return T_EXIT_PASS;
}

/* The whole directory by getdents64(2) from position 0, on a fd of its own. */
static int reference(int dfd, struct listing *l)
{
	char buf[1 << 15];
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY);
	int n, ret = T_EXIT_PASS;

	if (fd < 0)
		return fail("open .: %s", strerror(errno));
	l->n = 0;
	while (ret == T_EXIT_PASS &&
	       (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		ret = parse(l, buf, n, 0);
	if (ret == T_EXIT_PASS && n < 0)
		ret = fail("getdents64: %s", strerror(errno));
	close(fd);
	return ret;
}

/* Whether the scratch directory's filesystem may end a read short. */
static int short_ok;

/* got equals want, or with prefix its first records. */
static int same_entries(const struct listing *got, const struct listing *want,
			int prefix, const char *what)
{
	int i;

	for (i = 0; i < got->n && i < want->n; i++) {
		const struct record *a = &got->r[i], *b = &want->r[i];

		/* Where a read stopped short, its d_off may be its own. */
		if (a->ino != b->ino || a->type != b->type ||
		    strcmp(a->name, b->name) ||
		    (a->off != b->off &&
		     !short_read_d_off(short_ok, a->ends_read, a->off, b->off)))
			return fail("%s: record %d is %s (d_off %lld), expected %s (d_off %lld)",
				    what, i, a->name, (long long)a->off,
				    b->name, (long long)b->off);
	}
	if (prefix ? got->n > want->n : got->n != want->n)
		return fail("%s: %d records, expected %s%d", what, got->n,
			    prefix ? "at most " : "", want->n);
	return T_EXIT_PASS;
}

/* Every readdirplus record against fstatat(2) of its name. */
static int check_plus(int dfd, const struct listing *got, const char *what)
{
	int i;

	for (i = 0; i < got->n; i++) {
		const struct record *r = &got->r[i];
		struct stat st;

		if (!strcmp(r->name, "..")) {
			if (r->error != -EOPNOTSUPP)
				return fail("%s: '..' carries %d", what,
					    r->error);
			continue;
		}
		if (r->error)
			return fail("%s: %s carries error %d", what, r->name,
				    r->error);
		if (fstatat(dfd, r->name, &st, AT_SYMLINK_NOFOLLOW))
			return fail("%s: fstatat %s: %s", what, r->name,
				    strerror(errno));
		if (!(r->stx.stx_mask & STATX_INO) || r->stx.stx_ino != st.st_ino ||
		    r->stx.stx_mode != st.st_mode ||
		    (S_ISREG(st.st_mode) && r->stx.stx_size != (uint64_t)st.st_size))
			return fail("%s: %s: statx ino %llu mode %o size %llu, fstatat %llu %o %lld",
				    what, r->name,
				    (unsigned long long)r->stx.stx_ino,
				    r->stx.stx_mode,
				    (unsigned long long)r->stx.stx_size,
				    (unsigned long long)st.st_ino, st.st_mode,
				    (long long)st.st_size);
	}
	return T_EXIT_PASS;
}

/*
 * Lists fd (a descriptor, or a fixed-file index with IOSQE_FIXED_FILE in
 * sqe_flags) by reads chained by d_off from 0, until a read returns 0 or
 * carries IORING_CQE_F_DIR_EOF. Returns the first error as a negative
 * errno in *err (and T_EXIT_PASS), or T_EXIT_FAIL for a bad record.
 */
static int list_chained(struct io_uring *ring, int fd, unsigned int sqe_flags,
			int plus, struct listing *l, int *err)
{
	char buf[READ_LEN] __attribute__((aligned(8)));
	int64_t off = 0;

	l->n = 0;
	*err = 0;
	for (;;) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
		struct io_uring_cqe *cqe;
		int res, ret;
		unsigned int flags;

		if (!sqe)
			return fail("no SQE");
		if (plus)
			io_uring_prep_getdents_plus(sqe, fd, buf, sizeof(buf),
						    off, PLUS_MASK);
		else
			io_uring_prep_getdents(sqe, fd, buf, sizeof(buf), off);
		io_uring_sqe_set_flags(sqe, sqe_flags);
		ret = io_uring_submit_and_wait(ring, 1);
		if (ret < 0)
			return fail("io_uring_submit_and_wait: %s",
				    strerror(-ret));
		ret = io_uring_wait_cqe(ring, &cqe);
		if (ret)
			return fail("io_uring_wait_cqe: %s", strerror(-ret));
		res = cqe->res;
		flags = cqe->flags;
		io_uring_cqe_seen(ring, cqe);
		if (res < 0) {
			*err = res;
			return T_EXIT_PASS;
		}
		if (res == 0)
			return T_EXIT_PASS;
		if (parse(l, buf, res, plus))
			return T_EXIT_FAIL;
		off = l->r[l->n - 1].off;
		if (flags & IORING_CQE_F_DIR_EOF)
			return T_EXIT_PASS;
	}
}

static char base[PATH_MAX];

/* Makes base/name holding n files keep-NNNNN (of n % 4097 bytes), a directory, a symlink. */
static int make_dir(const char *name, int n, int *fd_out)
{
	char path[PATH_MAX + NAME_LEN];
	int dfd, i;

	snprintf(path, sizeof(path), "%s/%s", base, name);
	if (mkdir(path, 0700))
		return fail("mkdir %s: %s", path, strerror(errno));
	dfd = open(path, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return fail("open %s: %s", path, strerror(errno));
	for (i = 0; i < n; i++) {
		char file[NAME_LEN];
		int fd;

		snprintf(file, sizeof(file), "keep-%05d", i);
		fd = openat(dfd, file, O_CREAT | O_WRONLY, 0600);
		if (fd < 0 || ftruncate(fd, i % 4097))
			return fail("create %s: %s", file, strerror(errno));
		close(fd);
	}
	if (mkdirat(dfd, "sub", 0700) || symlinkat("sub", dfd, "link"))
		return fail("mkdir/symlink in %s: %s", path, strerror(errno));
	*fd_out = dfd;
	return T_EXIT_PASS;
}

static struct listing want, got;

/* One listing on ring, plain and readdirplus, against getdents64(2). */
static int list_both_ways(struct io_uring *ring, int dfd, int fd,
			  unsigned int sqe_flags, const char *what)
{
	char label[128];
	int err, plus;

	if (reference(dfd, &want))
		return T_EXIT_FAIL;
	for (plus = 0; plus <= 1; plus++) {
		snprintf(label, sizeof(label), "%s%s", what,
			 plus ? ", readdirplus" : "");
		if (list_chained(ring, fd, sqe_flags, plus, &got, &err))
			return T_EXIT_FAIL;
		if (err)
			return fail("%s: %s", label, strerror(-err));
		if (same_entries(&got, &want, 0, label) ||
		    (plus && check_plus(dfd, &got, label)))
			return T_EXIT_FAIL;
	}
	return T_EXIT_PASS;
}

/* A ring set up with flags lists the directory, inline and with IOSQE_ASYNC. */
static int ring_kind(const char *dir, unsigned int setup_flags,
		     const char *what)
{
	struct io_uring_params p = { .flags = setup_flags, .sq_thread_idle = 50 };
	struct io_uring ring;
	char label[128];
	int dfd, ret;

	ret = io_uring_queue_init_params(8, &ring, &p);
	if (ret)
		return fail("%s: io_uring_queue_init_params: %s", what,
			    strerror(-ret));
	ret = make_dir(dir, 600, &dfd);
	if (!ret)
		ret = list_both_ways(&ring, dfd, dfd, 0, what);
	if (!ret) {
		snprintf(label, sizeof(label), "%s, IOSQE_ASYNC", what);
		ret = list_both_ways(&ring, dfd, dfd, IOSQE_ASYNC, label);
	}
	close(dfd);
	io_uring_queue_exit(&ring);
	return ret;
}

static int test_default_ring(void)
{
	return ring_kind("default", 0, "default ring");
}

static int test_sqpoll(void)
{
	return ring_kind("sqpoll", IORING_SETUP_SQPOLL, "SQPOLL");
}

static int test_defer_taskrun(void)
{
	return ring_kind("defer", IORING_SETUP_SINGLE_ISSUER |
				  IORING_SETUP_DEFER_TASKRUN, "DEFER_TASKRUN");
}

static int test_fixed_file(void)
{
	struct io_uring ring;
	int dfd, ret;

	ret = io_uring_queue_init(8, &ring, 0);
	if (ret)
		return fail("io_uring_queue_init: %s", strerror(-ret));
	ret = make_dir("fixed", 600, &dfd);
	if (!ret && (ret = io_uring_register_files(&ring, &dfd, 1)))
		ret = fail("io_uring_register_files: %s", strerror(-ret));
	if (!ret)
		ret = list_both_ways(&ring, dfd, 0, IOSQE_FIXED_FILE,
				     "fixed file");
	if (!ret)
		ret = list_both_ways(&ring, dfd, 0,
				     IOSQE_FIXED_FILE | IOSQE_ASYNC,
				     "fixed file, IOSQE_ASYNC");
	close(dfd);
	io_uring_queue_exit(&ring);
	return ret;
}

struct seeker {
	int fd;
	const struct listing *want;
	volatile int stop;
	long rounds;
};

/* Moves the shared file position around and reads from it, as a program would. */
static void *seek_and_read(void *arg)
{
	struct seeker *s = arg;
	char buf[512];
	unsigned int seed = 1;

	while (!s->stop) {
		int i = rand_r(&seed) % (s->want->n + 1);
		off_t to = i == s->want->n ? 0 : s->want->r[i].off;

		if (lseek(s->fd, to, SEEK_SET) < 0 ||
		    syscall(SYS_getdents64, s->fd, buf, sizeof(buf)) < 0) {
			fail("seeker: %s", strerror(errno));
			break;
		}
		s->rounds++;
	}
	return NULL;
}

/*
 * Reads chained by explicit d_off must give exactly getdents64's listing
 * while another thread seeks and reads the same open file; reads at -1
 * (the file position) must give records that follow each other in it.
 */
static int test_racing_lseek(void)
{
	struct seeker s = { .stop = 0 };
	struct io_uring ring;
	struct timespec t0, t;
	pthread_t thread;
	int dfd, ret, passes = 0;

	ret = io_uring_queue_init(8, &ring, 0);
	if (ret)
		return fail("io_uring_queue_init: %s", strerror(-ret));
	ret = make_dir("lseek", 500, &dfd);
	if (!ret)
		ret = reference(dfd, &want);
	if (ret) {
		io_uring_queue_exit(&ring);
		return ret;
	}
	s.fd = dfd;
	s.want = &want;
	if (pthread_create(&thread, NULL, seek_and_read, &s))
		return fail("pthread_create failed");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		char buf[READ_LEN] __attribute__((aligned(8)));
		struct io_uring_sqe *sqe;
		struct io_uring_cqe *cqe;
		int err, i, j, res;

		if ((ret = list_chained(&ring, dfd, passes % 2 ? IOSQE_ASYNC : 0,
					0, &got, &err)))
			break;
		if (err) {
			ret = fail("chained read: %s", strerror(-err));
			break;
		}
		if ((ret = same_entries(&got, &want, 0, "chained by d_off")))
			break;
		/* One read at the file position, wherever the seeker left it. */
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_getdents(sqe, dfd, buf, sizeof(buf), (__u64)-1);
		io_uring_submit_and_wait(&ring, 1);
		if (io_uring_wait_cqe(&ring, &cqe)) {
			ret = fail("io_uring_wait_cqe failed");
			break;
		}
		res = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
		if (res < 0) {
			ret = fail("read at -1: %s", strerror(-res));
			break;
		}
		got.n = 0;
		if ((ret = parse(&got, buf, res, 0)))
			break;
		for (i = 0; got.n && i < want.n; i++)
			if (!strcmp(want.r[i].name, got.r[0].name))
				break;
		for (j = 0; j < got.n; j++) {
			if (i + j >= want.n ||
			    strcmp(want.r[i + j].name, got.r[j].name)) {
				ret = fail("read at -1: record %d (%s) does not follow the one before",
					   j, got.r[j].name);
				break;
			}
		}
		if (ret)
			break;
		passes++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 1 || passes < 20);
	s.stop = 1;
	pthread_join(thread, NULL);
	close(dfd);
	io_uring_queue_exit(&ring);
	if (!ret && failure[0])
		ret = T_EXIT_FAIL;
	if (!ret && s.rounds == 0)
		ret = fail("the seeker never ran");
	return ret;
}

/* Waits for count CQEs; stores res by user_data (0..count-1) in res[]. */
static int collect(struct io_uring *ring, int count, int *res, int *seen)
{
	int i;

	for (i = 0; i < count; i++) {
		struct io_uring_cqe *cqe;
		int ret = io_uring_wait_cqe(ring, &cqe);

		if (ret)
			return fail("io_uring_wait_cqe: %s", strerror(-ret));
		if (cqe->user_data >= (uint64_t)count || seen[cqe->user_data]++)
			return fail("unexpected or repeated CQE %llu",
				    (unsigned long long)cqe->user_data);
		res[cqe->user_data] = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	}
	return T_EXIT_PASS;
}

/*
 * A read linked behind a long timeout: removing the timeout breaks the
 * link, and the read, never started, completes with -ECANCELED.
 */
static int cancel_linked(struct io_uring *ring, int dfd)
{
	static char buf[READ_LEN];
	struct __kernel_timespec ts = { .tv_sec = 60 };
	struct io_uring_sqe *sqe;
	int res[3], seen[3] = { 0 };

	sqe = io_uring_get_sqe(ring);
	io_uring_prep_timeout(sqe, &ts, 0, 0);
	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = 0;
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_getdents(sqe, dfd, buf, sizeof(buf), 0);
	sqe->user_data = 1;
	io_uring_submit(ring);
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_timeout_remove(sqe, 0, 0);
	sqe->user_data = 2;
	io_uring_submit(ring);
	if (collect(ring, 3, res, seen))
		return T_EXIT_FAIL;
	if (res[0] != -ECANCELED || res[1] != -ECANCELED || res[2] != 0)
		return fail("linked read: timeout %d, read %d, remove %d",
			    res[0], res[1], res[2]);
	return T_EXIT_PASS;
}

#define INFLIGHT 32

/*
 * Reads in io-wq, all cancelled by file: each completes once, with the
 * first records of the listing or -ECANCELED (-EINTR if the worker was
 * already in the filesystem), and the cancel counts the cancelled ones.
 */
static int cancel_in_iowq(struct io_uring *ring, int dfd)
{
	static char bufs[INFLIGHT][READ_LEN];
	int res[INFLIGHT + 1], seen[INFLIGHT + 1] = { 0 };
	int i, cancelled = 0;
	struct io_uring_sqe *sqe;

	if (reference(dfd, &want))
		return T_EXIT_FAIL;
	for (i = 0; i < INFLIGHT; i++) {
		sqe = io_uring_get_sqe(ring);
		io_uring_prep_getdents(sqe, dfd, bufs[i], READ_LEN, 0);
		sqe->flags |= IOSQE_ASYNC;
		sqe->user_data = i;
	}
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_cancel_fd(sqe, dfd, IORING_ASYNC_CANCEL_ALL);
	sqe->user_data = INFLIGHT;
	io_uring_submit(ring);
	if (collect(ring, INFLIGHT + 1, res, seen))
		return T_EXIT_FAIL;
	for (i = 0; i < INFLIGHT; i++) {
		if (res[i] == -ECANCELED || res[i] == -EINTR) {
			cancelled++;
			continue;
		}
		if (res[i] <= 0)
			return fail("read %d in io-wq: %d", i, res[i]);
		got.n = 0;
		if (parse(&got, bufs[i], res[i], 0) ||
		    same_entries(&got, &want, 1, "read in io-wq"))
			return T_EXIT_FAIL;
	}
	/* The cancel's own count: how many it found, or -ENOENT for none. */
	if (res[INFLIGHT] == -ENOENT ? cancelled != 0 :
	    res[INFLIGHT] < 0 || res[INFLIGHT] > INFLIGHT)
		return fail("cancel by file: %d, reads cancelled %d",
			    res[INFLIGHT], cancelled);
	return T_EXIT_PASS;
}

/* A process that exits with reads in io-wq: no hang, the ring goes away. */
static int exit_in_flight(int dfd)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return fail("fork: %s", strerror(errno));
	if (pid == 0) {
		static char bufs[INFLIGHT][READ_LEN];
		struct io_uring ring;
		int i;

		if (io_uring_queue_init(INFLIGHT, &ring, 0))
			_exit(2);
		for (i = 0; i < INFLIGHT; i++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

			io_uring_prep_getdents_plus(sqe, dfd, bufs[i], READ_LEN,
						    0, PLUS_MASK);
			sqe->flags |= i % 2 ? IOSQE_ASYNC : 0;
		}
		io_uring_submit(&ring);
		_exit(0);
	}
	alarm(60);
	if (waitpid(pid, &status, 0) != pid)
		return fail("waitpid: %s", strerror(errno));
	alarm(0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return fail("the child ended with status %#x", status);
	return T_EXIT_PASS;
}

static int test_cancel(void)
{
	struct io_uring ring;
	int dfd, ret;

	ret = io_uring_queue_init(2 * INFLIGHT, &ring, 0);
	if (ret)
		return fail("io_uring_queue_init: %s", strerror(-ret));
	ret = make_dir("cancel", 1000, &dfd);
	if (!ret)
		ret = cancel_linked(&ring, dfd);
	if (!ret)
		ret = cancel_in_iowq(&ring, dfd);
	if (!ret)
		ret = exit_in_flight(dfd);
	close(dfd);
	io_uring_queue_exit(&ring);
	return ret;
}

#define STRESS_KEEP	300

struct stress {
	int dfd;
	volatile int stop;
	long passes, changes;
	int mode;	/* readers: 0 plain, 1 readdirplus, 2 IOSQE_ASYNC */
};

/* Creates, renames and removes tmp-* entries until told to stop. */
static void *churn(void *arg)
{
	struct stress *s = arg;
	char a[64], b[64];
	long i;

	for (i = 0; !s->stop; i++) {
		int fd;

		snprintf(a, sizeof(a), "tmp-%ld", i);
		fd = openat(s->dfd, a, O_CREAT | O_WRONLY, 0600);
		if (fd < 0) {
			fail("create %s: %s", a, strerror(errno));
			break;
		}
		close(fd);
		if (i % 3 == 0) {
			snprintf(b, sizeof(b), "tmp-%ld-renamed-with-a-longer-name", i);
			if (renameat(s->dfd, a, s->dfd, b)) {
				fail("rename %s: %s", a, strerror(errno));
				break;
			}
		}
		if (i >= 40) {
			snprintf(a, sizeof(a), "tmp-%ld", i - 40);
			if (unlinkat(s->dfd, a, 0) && errno == ENOENT) {
				snprintf(b, sizeof(b),
					 "tmp-%ld-renamed-with-a-longer-name",
					 i - 40);
				unlinkat(s->dfd, b, 0);
			}
		}
		s->changes++;
	}
	return NULL;
}

/* Lists the directory over and over on a ring of its own. */
static void *reader(void *arg)
{
	struct listing *l = malloc(sizeof(*l));
	struct stress *s = arg;
	struct io_uring ring;
	unsigned char seen[STRESS_KEEP];

	if (!l || io_uring_queue_init(4, &ring, 0)) {
		fail("reader: no memory or no ring");
		free(l);
		return NULL;
	}
	while (!s->stop) {
		int err, i;

		if (list_chained(&ring, s->dfd, s->mode == 2 ? IOSQE_ASYNC : 0,
				 s->mode == 1, l, &err))
			break;
		if (err) {
			fail("reader %d: %s", s->mode, strerror(-err));
			break;
		}
		memset(seen, 0, sizeof(seen));
		for (i = 0; i < l->n; i++) {
			const struct record *r = &l->r[i];
			int k;

			if (!strncmp(r->name, "keep-", 5)) {
				k = atoi(r->name + 5);
				if (k < 0 || k >= STRESS_KEEP || seen[k]++) {
					fail("reader %d, pass %ld: %s listed twice",
					     s->mode, s->passes, r->name);
					goto out;
				}
				if (s->mode == 1 && r->error) {
					fail("reader: %s carries %d", r->name,
					     r->error);
					goto out;
				}
			} else if (s->mode == 1 && r->error &&
				   r->error != -ENOENT &&
				   strcmp(r->name, "..")) {
				fail("reader: %s carries %d", r->name,
				     r->error);
				goto out;
			}
		}
		for (i = 0; i < STRESS_KEEP; i++) {
			if (!seen[i]) {
				fail("reader %d, pass %ld: keep-%05d missing",
				     s->mode, s->passes, i);
				goto out;
			}
		}
		s->passes++;
	}
out:
	io_uring_queue_exit(&ring);
	free(l);
	return NULL;
}

static int stress_seconds(void)
{
	const char *v = getenv("GETDENTS_STRESS_SECONDS");

	return v && atoi(v) > 0 ? atoi(v) : 3;
}

/*
 * Three readers (plain, readdirplus, IOSQE_ASYNC) against a thread that
 * changes the directory: entries never touched are listed exactly once by
 * every pass, as POSIX asks of readdir.
 */
static int test_stress(void)
{
	struct stress readers[3], changer = { .stop = 0 };
	pthread_t threads[4];
	int dfd, i, ret;

	ret = make_dir("stress", STRESS_KEEP, &dfd);
	if (ret)
		return ret;
	changer.dfd = dfd;
	if (pthread_create(&threads[3], NULL, churn, &changer))
		return fail("pthread_create failed");
	for (i = 0; i < 3; i++) {
		readers[i] = (struct stress){ .dfd = dfd, .mode = i };
		if (pthread_create(&threads[i], NULL, reader, &readers[i]))
			return fail("pthread_create failed");
	}
	sleep(stress_seconds());
	for (i = 0; i < 3; i++)
		readers[i].stop = 1;
	changer.stop = 1;
	for (i = 0; i < 4; i++)
		pthread_join(threads[i], NULL);
	close(dfd);
	if (failure[0])
		return T_EXIT_FAIL;
	for (i = 0; i < 3; i++)
		if (readers[i].passes == 0)
			return fail("reader %d made no pass in %d s", i,
				    stress_seconds());
	if (changer.changes == 0)
		return fail("the directory never changed");
	printf("stress: %ld, %ld, %ld passes (plain, readdirplus, async) against %ld changes\n",
	       readers[0].passes, readers[1].passes, readers[2].passes,
	       changer.changes);
	return T_EXIT_PASS;
}

static int getdents_available(void)
{
	struct io_uring_probe *probe = io_uring_get_probe();
	int ok = probe && probe->last_op == IORING_OP_GETDENTS &&
		 io_uring_opcode_supported(probe, IORING_OP_GETDENTS);

	io_uring_free_probe(probe);
	return ok;
}

int main(void)
{
	static const struct c_test tests[] = {
		{ "liburing_default_ring", test_default_ring },
		{ "liburing_sqpoll", test_sqpoll },
		{ "liburing_defer_taskrun", test_defer_taskrun },
		{ "liburing_fixed_file", test_fixed_file },
		{ "liburing_racing_lseek", test_racing_lseek },
		{ "liburing_cancel", test_cancel },
		{ "liburing_stress", test_stress },
	};
	const char *tmp = getenv("TMPDIR");
	int n = sizeof(tests) / sizeof(tests[0]);
	int i, passed = 0, failed = 0, base_fd;
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!getdents_available())
		return getdents_missing(IORING_OP_GETDENTS) ? T_EXIT_FAIL : T_EXIT_SKIP;
	snprintf(base, sizeof(base), "%s/getdents-liburing.XXXXXX",
		 tmp ? tmp : "/tmp");
	if (!mkdtemp(base)) {
		fprintf(stderr, "mkdtemp %s: %s\n", base, strerror(errno));
		return T_EXIT_FAIL;
	}
	base_fd = open(base, O_RDONLY | O_DIRECTORY);
	short_ok = base_fd >= 0 && short_reads_possible(base_fd);
	if (base_fd >= 0)
		close(base_fd);
	printf("running %d tests in %s\n", n, base);
	for (i = 0; i < n; i++) {
		failure[0] = '\0';
		report_test(tests[i].name, tests[i].fn() != T_EXIT_PASS,
			    failure, &passed, &failed);
	}
	base_fd = open(base, O_RDONLY | O_DIRECTORY);
	if (base_fd >= 0) {
		remove_tree(base_fd);
		rmdir(base);
	}
	report_result(passed, failed, &t0);
	return failed ? T_EXIT_FAIL : T_EXIT_PASS;
}
