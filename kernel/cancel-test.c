// SPDX-License-Identifier: MIT
/*
 * Description: how a readdirplus read (IORING_OP_GETDENTS with
 * IORING_GETDENTS_PLUS) ends early, and what it keeps.
 *
 * - cancel_between_lookups: a read of a FUSE directory runs in io-wq and
 *   makes a LOOKUP round trip per name. The FUSE server here (raw
 *   /dev/fuse, in a child process) holds the second LOOKUP until the test
 *   has cancelled the read (IORING_OP_ASYNC_CANCEL). The read must stop
 *   after that lookup, not go on with the other names, and the names it
 *   read but did not deliver must come back from the file position: a
 *   getdents64(2) loop afterwards lists exactly the rest.
 * - efault_keeps_records: a read whose second record falls on a page that
 *   cannot be written returns the first record (as getdents64(2) returns
 *   what it wrote before an -EFAULT), and the rest is read from the file
 *   position.
 * - one_readdir_per_read: a read of the FUSE directory that takes in all
 *   of it costs the server as many READDIR requests as getdents64(2) of
 *   the same size, and returns the same bytes and file position. FUSE does
 *   not report the end of a directory, so IORING_CQE_F_DIR_EOF is absent
 *   and the next read returns 0, as with getdents64(2).
 *
 * Counts, never times: the server counts the LOOKUPs and READDIRs it
 * answered. Prints the lines of Rust's test harness, as
 * kernel/getdents-test.c does; runs as root (mount). kernel/test-vm builds
 * it with the series' opcode.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <linux/fuse.h>
#include <linux/io_uring.h>
#include <linux/magic.h>
#include <linux/stat.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "c-test.h"

#define GETDENTS_PLUS	(1U << 0)
#ifndef IORING_CQE_F_DIR_EOF
#define IORING_CQE_F_DIR_EOF	(1U << 14)
#endif
#define NAMES		40	/* entries of the FUSE directory */
#define HELD_LOOKUP	2	/* the LOOKUP the server holds */
#define BUF_LEN		65536

/* Shared between the test and the FUSE server (MAP_SHARED). */
struct shared {
	int lookups;		/* LOOKUPs answered */
	int release;		/* the held LOOKUP may be answered */
	int readdirs;		/* READDIRs answered */
};

static struct shared *sh;
static char failure[512];

static int fail(const char *msg, long a, long b)
{
	snprintf(failure, sizeof(failure), msg, a, b);
	return 1;
}

static void prep_plus(struct io_uring_sqe *sqe, int fd, void *buf,
		      unsigned int len)
{
	sqe->opcode = OP_GETDENTS;
	sqe->fd = fd;
	sqe->addr = (uintptr_t)buf;
	sqe->len = len;
	sqe->off = (uint64_t)-1;
	sqe->rw_flags = GETDENTS_PLUS;
	sqe->file_index = STATX_BASIC_STATS;
	sqe->user_data = 1;
}

/* Names of the readdirplus records in buf[0..len), as bits of *seen. */
static int mark_records(const char *buf, int len, uint64_t *seen)
{
	int n = 0, pos = 0;

	while (pos < len) {
		const struct dirent64 *d = (const void *)(buf + pos);
		int i;

		if (sscanf(d->d_name, "f%d", &i) == 1 && i >= 0 && i < 64)
			*seen |= 1ULL << i;
		pos += d->d_reclen;
		n++;
	}
	return n;
}

/* The rest of the directory through getdents64(2), from the file position. */
static int mark_rest(int dfd, uint64_t *seen)
{
	static char buf[BUF_LEN];
	long len;

	while ((len = syscall(SYS_getdents64, dfd, buf, sizeof(buf))) > 0) {
		long pos = 0;

		while (pos < len) {
			const struct dirent64 *d = (const void *)(buf + pos);
			int i;

			if (sscanf(d->d_name, "f%d", &i) == 1 && i >= 0 && i < 64) {
				if (*seen & (1ULL << i))
					return fail("f%ld listed twice", i, 0);
				*seen |= 1ULL << i;
			}
			pos += d->d_reclen;
		}
	}
	return len < 0 ? fail("getdents64: errno %ld", errno, 0) : 0;
}

/* --- the FUSE server ------------------------------------------------------ */
static void fill_attr(struct fuse_attr *a, uint64_t node)
{
	memset(a, 0, sizeof(*a));
	a->ino = node;
	a->mode = node == FUSE_ROOT_ID ? S_IFDIR | 0755 : S_IFREG | 0644;
	a->nlink = node == FUSE_ROOT_ID ? 2 : 1;
	a->size = node;
	a->blksize = 4096;
}

static void reply(int fd, uint64_t unique, int error, const void *out,
		  size_t len)
{
	char buf[sizeof(struct fuse_out_header) + 8192];
	struct fuse_out_header *h = (void *)buf;

	h->unique = unique;
	h->error = error;
	h->len = sizeof(*h) + (error ? 0 : len);
	if (!error && len)
		memcpy(buf + sizeof(*h), out, len);
	if (write(fd, buf, h->len) < 0 && errno != ENOENT)
		_exit(1);
}

/* READDIR from offset off: f<i> with the offset of the next one. */
static size_t fill_dir(char *out, size_t size, uint64_t off)
{
	size_t used = 0;

	for (uint64_t i = off; i < NAMES; i++) {
		struct fuse_dirent *d = (void *)(out + used);
		char name[16];
		size_t namelen = snprintf(name, sizeof(name), "f%02u", (unsigned int)i);
		size_t reclen = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + namelen);

		if (used + reclen > size)
			break;
		memset(d, 0, reclen);
		d->ino = i + 2;
		d->off = i + 1;
		d->namelen = namelen;
		d->type = DT_REG;
		memcpy(d->name, name, namelen);
		used += reclen;
	}
	return used;
}

static void serve(int fd)
{
	static char in[FUSE_MIN_READ_BUFFER + 65536];
	char out[8192];

	for (;;) {
		ssize_t n = read(fd, in, sizeof(in));
		struct fuse_in_header *h = (void *)in;
		void *arg = in + sizeof(*h);

		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < (ssize_t)sizeof(*h))
			_exit(0);	/* unmounted */
		switch (h->opcode) {
		case FUSE_INIT: {
			struct fuse_init_out o = { .major = FUSE_KERNEL_VERSION,
						   .minor = 31, .max_write = 4096,
						   .max_readahead = 4096 };
			reply(fd, h->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_LOOKUP: {
			struct fuse_entry_out o = { 0 };
			unsigned int i;

			if (sscanf(arg, "f%u", &i) != 1 || i >= NAMES) {
				reply(fd, h->unique, -ENOENT, NULL, 0);
				break;
			}
			if (__atomic_load_n(&sh->lookups, __ATOMIC_ACQUIRE) + 1 ==
			    HELD_LOOKUP)
				while (!__atomic_load_n(&sh->release, __ATOMIC_ACQUIRE))
					usleep(1000);
			o.nodeid = i + 2;
			fill_attr(&o.attr, o.nodeid);
			reply(fd, h->unique, 0, &o, sizeof(o));
			__atomic_add_fetch(&sh->lookups, 1, __ATOMIC_RELEASE);
			break;
		}
		case FUSE_GETATTR: {
			struct fuse_attr_out o = { 0 };

			fill_attr(&o.attr, h->nodeid);
			reply(fd, h->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_OPENDIR: {
			struct fuse_open_out o = { .fh = 1 };

			reply(fd, h->unique, 0, &o, sizeof(o));
			break;
		}
		case FUSE_READDIR: {
			const struct fuse_read_in *r = arg;
			size_t size = r->size < sizeof(out) ? r->size : sizeof(out);

			/* Counted before the reply that lets the reader go on. */
			__atomic_add_fetch(&sh->readdirs, 1, __ATOMIC_RELEASE);
			reply(fd, h->unique, 0, out, fill_dir(out, size, r->offset));
			break;
		}
		case FUSE_RELEASEDIR:
			reply(fd, h->unique, 0, NULL, 0);
			break;
		case FUSE_FORGET:
		case FUSE_BATCH_FORGET:
		case FUSE_INTERRUPT:	/* the held request is answered anyway */
			break;
		default:
			reply(fd, h->unique, -ENOSYS, NULL, 0);
		}
	}
}

/* --- the tests ------------------------------------------------------------ */
static struct ring ring;
static char base[4096];
static char mnt[4200];

static void unmount_fuse(pid_t server)
{
	umount2(mnt, MNT_DETACH);
	kill(server, SIGKILL);
	waitpid(server, NULL, 0);
	rmdir(mnt);
}

/*
 * Mounts the server's filesystem on base/fuse (its pid to *server) and
 * opens its root: the descriptor, or -1 with the failure recorded and
 * nothing left mounted.
 */
static int open_fuse_dir(pid_t *server)
{
	char opts[128];
	int fd, dfd;

	memset(sh, 0, sizeof(*sh));
	snprintf(mnt, sizeof(mnt), "%s/fuse", base);
	if (mkdir(mnt, 0755)) {
		fail("mkdir: errno %ld", errno, 0);
		return -1;
	}
	fd = open("/dev/fuse", O_RDWR);
	if (fd < 0) {
		fail("open /dev/fuse: errno %ld", errno, 0);
		return -1;
	}
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0",
		 fd);
	if (mount("cancel-test", mnt, "fuse", MS_NOSUID | MS_NODEV, opts)) {
		fail("mount fuse: errno %ld", errno, 0);
		return -1;
	}
	*server = fork();
	if (*server == 0)
		serve(fd);
	close(fd);
	dfd = open(mnt, O_RDONLY | O_DIRECTORY);
	if (dfd < 0) {
		fail("open the FUSE directory: errno %ld", errno, 0);
		unmount_fuse(*server);
	}
	return dfd;
}

static int test_cancel_between_lookups(void)
{
	static char buf[BUF_LEN];
	struct io_uring_cqe cqe, read_cqe;
	struct io_uring_sqe *sqe;
	uint64_t seen = 0;
	int dfd, records, got_read = 0, got_cancel = 0, ret = 0;
	pid_t server;

	dfd = open_fuse_dir(&server);
	if (dfd < 0)
		return 1;
	/* FUSE reads directories in io-wq; the server holds the 2nd LOOKUP. */
	prep_plus(get_sqe(&ring), dfd, buf, sizeof(buf));
	if (ring_enter(&ring, 1, 0, 0) != 1) {
		ret = fail("submit: errno %ld", errno, 0);
		goto out;
	}
	/*
	 * Once a lookup is answered the worker is in the lookup loop, and
	 * it cannot get past the held one before the cancel: wherever the
	 * cancel finds it, the read must stop before the third name.
	 */
	while (__atomic_load_n(&sh->lookups, __ATOMIC_ACQUIRE) < HELD_LOOKUP - 1)
		usleep(1000);
	sqe = get_sqe(&ring);
	sqe->opcode = IORING_OP_ASYNC_CANCEL;
	sqe->addr = 1;
	sqe->user_data = 2;
	if (ring_enter(&ring, 1, 0, 0) != 1) {
		ret = fail("cancel: errno %ld", errno, 0);
		goto out;
	}
	/*
	 * Both completions, the read's and the cancel's, in either order: one
	 * left in the ring would be taken by the next test. The held lookup
	 * is answered once the first has come.
	 */
	while (!got_read || !got_cancel) {
		if (wait_cqe(&ring, &cqe)) {
			ret = fail("wait: errno %ld", errno, 0);
			goto out;
		}
		if (cqe.user_data == 1) {
			read_cqe = cqe;
			got_read = 1;
		} else {
			got_cancel = 1;
		}
		__atomic_store_n(&sh->release, 1, __ATOMIC_RELEASE);
	}
	if (read_cqe.res <= 0) {
		ret = fail("the cancelled read gave %ld, not its records", read_cqe.res, 0);
		goto out;
	}
	records = mark_records(buf, read_cqe.res, &seen);
	if (records >= NAMES || sh->lookups >= NAMES) {
		ret = fail("the cancelled read went on: %ld records, %ld lookups",
			   records, sh->lookups);
		goto out;
	}
	ret = mark_rest(dfd, &seen);
	if (!ret && seen != (1ULL << NAMES) - 1)
		ret = fail("names lost: %ld of %ld listed", __builtin_popcountll(seen),
			   NAMES);
out:
	__atomic_store_n(&sh->release, 1, __ATOMIC_RELEASE);
	close(dfd);
	unmount_fuse(server);
	return ret;
}

/*
 * The end of the directory costs the filesystem nothing more: a read that
 * takes in the whole FUSE directory sends the server as many READDIRs as
 * getdents64(2) of the same size (one; a second iteration to look for the
 * end would send another), and gives its bytes and file position.
 */
static int test_one_readdir_per_read(void)
{
	static char want[BUF_LEN], got[BUF_LEN];
	struct io_uring_cqe cqe;
	long n64, r64, r, pos64;
	int dfd, ret = 0;
	pid_t server;

	dfd = open_fuse_dir(&server);
	if (dfd < 0)
		return 1;
	n64 = syscall(SYS_getdents64, dfd, want, sizeof(want));
	r64 = __atomic_load_n(&sh->readdirs, __ATOMIC_ACQUIRE);
	pos64 = lseek(dfd, 0, SEEK_CUR);
	if (n64 <= 0 || r64 != 1 || lseek(dfd, 0, SEEK_SET) != 0) {
		ret = fail("getdents64 gave %ld after %ld READDIRs", n64, r64);
		goto out;
	}
	getdents_sqe(&ring, dfd, got, sizeof(got), -1);
	if (ring_enter(&ring, 1, 1, IORING_ENTER_GETEVENTS) != 1 ||
	    wait_cqe(&ring, &cqe)) {
		ret = fail("submit: errno %ld", errno, 0);
		goto out;
	}
	r = __atomic_load_n(&sh->readdirs, __ATOMIC_ACQUIRE) - r64;
	if (r != r64)
		ret = fail("the read sent %ld READDIRs, getdents64 %ld", r, r64);
	else if (cqe.res != n64 || memcmp(got, want, n64))
		ret = fail("the read gave %ld bytes, getdents64 %ld", cqe.res, n64);
	else if (lseek(dfd, 0, SEEK_CUR) != pos64)
		ret = fail("position %ld after the read, %ld after getdents64",
			   lseek(dfd, 0, SEEK_CUR), pos64);
	else if (cqe.flags & IORING_CQE_F_DIR_EOF)
		ret = fail("IORING_CQE_F_DIR_EOF (flags 0x%lx) from FUSE, which does not report its end",
			   cqe.flags, 0);
	else if ((n64 = syscall(SYS_getdents64, dfd, want, sizeof(want))) != 0)
		ret = fail("the next read gave %ld, not 0", n64, 0);
out:
	close(dfd);
	unmount_fuse(server);
	return ret;
}

static int test_efault_keeps_records(void)
{
	long page = sysconf(_SC_PAGESIZE);
	char dir[4200], name[4300];
	struct io_uring_cqe cqe;
	uint64_t seen = 0;
	char *map;
	int dfd, i, first, ret = 0;

	snprintf(dir, sizeof(dir), "%s/efault", base);
	if (mkdir(dir, 0755))
		return fail("mkdir: errno %ld", errno, 0);
	for (i = 0; i < NAMES; i++) {
		snprintf(name, sizeof(name), "%s/f%02d", dir, i);
		close(open(name, O_CREAT | O_WRONLY, 0644));
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (dfd < 0 || map == MAP_FAILED || mprotect(map + page, page, PROT_NONE))
		return fail("setup: errno %ld", errno, 0);
	/* Room for "." or ".." and one more record before the hole. */
	first = 2 * (24 + 8 + (int)sizeof(struct statx));
	prep_plus(get_sqe(&ring), dfd, map + page - first, 4096);
	if (ring_enter(&ring, 1, 1, IORING_ENTER_GETEVENTS) != 1 ||
	    wait_cqe(&ring, &cqe))
		return fail("submit: errno %ld", errno, 0);
	if (cqe.res <= 0 || cqe.res > first)
		ret = fail("read into a buffer that ends after %ld bytes gave %ld",
			   first, cqe.res);
	else
		mark_records(map + page - first, cqe.res, &seen);
	if (!ret)
		ret = mark_rest(dfd, &seen);
	if (!ret && seen != (1ULL << NAMES) - 1)
		ret = fail("names lost: %ld of %ld listed", __builtin_popcountll(seen),
			   NAMES);
	close(dfd);
	return ret;
}

static const struct c_test tests[] = {
	{ "cancel_between_lookups", test_cancel_between_lookups },
	{ "efault_keeps_records", test_efault_keeps_records },
	{ "one_readdir_per_read", test_one_readdir_per_read },
};

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	int i, passed = 0, failed = 0, fd;
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (ring_init(&ring, 8, 0)) {
		fprintf(stderr, "io_uring_setup: %s\n", strerror(errno));
		return 1;
	}
	if (!getdents_available(&ring))
		return getdents_missing(OP_GETDENTS) ? 1 : 0;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	snprintf(base, sizeof(base), "%s/cancel-test.XXXXXX", tmp ? tmp : "/tmp");
	if (sh == MAP_FAILED || !mkdtemp(base)) {
		fprintf(stderr, "setup: %s\n", strerror(errno));
		return 1;
	}
	printf("running %d tests in %s\n", (int)(sizeof(tests) / sizeof(tests[0])),
	       base);
	for (i = 0; i < (int)(sizeof(tests) / sizeof(tests[0])); i++) {
		failure[0] = '\0';
		report_test(tests[i].name, tests[i].fn(), failure, &passed, &failed);
	}
	fd = open(base, O_RDONLY | O_DIRECTORY);
	if (fd >= 0)
		remove_tree(fd);
	rmdir(base);
	report_result(passed, failed, &t0);
	return failed ? 1 : 0;
}
