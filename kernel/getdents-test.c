// SPDX-License-Identifier: MIT
/*
 * Description: edge cases of IORING_OP_GETDENTS (kernel/patches), in the
 * manner of liburing's tests but with raw system calls only, so that it
 * builds with nothing but a C compiler and the libc headers.
 *
 * Covers: reads chained by d_off and at off = -1 against getdents64(2),
 * f_pos after a read, reads linked with IOSQE_IO_LINK, -EINVAL for every
 * reserved SQE byte and for offsets ->llseek refuses, -ENOTDIR, -EFAULT,
 * IORING_CQE_F_DIR_EOF on exactly the last read, a directory changed
 * between reads, which requests complete inline rather than in io-wq (no
 * io-wq worker is ever created for them), one IN_ACCESS event per read, a
 * read that reaches the end equal to getdents64(2)'s (records, last d_off,
 * file position, IN_ACCESS events), and on ext4 the width of d_off: kernel/test-vm also builds this file as
 * a static i386 program, whose positions must be 32-bit ones in io-wq too;
 * a 64-bit ring whose io-wq worker was forked in a 32-bit io_uring_enter
 * must still give 64-bit ones.
 * Readdirplus (IORING_GETDENTS_PLUS): every record against statx(2) of its
 * name, inline and in io-wq, a mount on an entry, the record layout, small
 * buffers and bad flags, every reserved SQE byte, a directory that cannot be searched, entries
 * removed and renamed between reads or while a read looks them up, and
 * that a directory in the dcache is read with no io-wq worker; with
 * IORING_GETDENTS_PLUS_DCACHE, the same answers from the dcache, inline
 * and in io-wq, a mount on an entry followed there too, "." of a
 * directory covered by a mount, which stays the directory, and the owners
 * seen through an idmapped mount. With fscrypt (ext4): an encrypted
 * directory with its key and without, and an encrypted file moved to a
 * plain directory, read inline from the dcache with STATX_DIOALIGN.
 *
 * The directories are made under $TMPDIR (kernel/test-vm runs this on
 * tmpfs, ext4, XFS and btrfs, which the series covers, and on overlayfs,
 * which it does not: there STATX and readdirplus never run inline and
 * lookups from the dcache only answer -EAGAIN). Prints one line per test
 * and a closing line in the format of Rust's test harness ("test result:
 * ok. N passed; M failed;"), which the CI sums with the other suites.
 * Exit status 0 when every test passed. Without GETDENTS on the running
 * kernel it prints "skipped" and exits 0, unless
 * IO_URING_GETDENTS_REQUIRE=1.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/fscrypt.h>
#include <linux/io_uring.h>
#include <linux/magic.h>
#include <linux/stat.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include "c-test.h"

#define OP_STATX	21
#ifndef IORING_CQE_F_DIR_EOF
#define IORING_CQE_F_DIR_EOF	(1U << 14)
#endif

#define MAX_ENTRIES	1024
#define NAME_LEN	256

struct record {
	uint64_t ino;
	int64_t off;
	unsigned char type;
	unsigned char ends_read;	/* the last record of its read */
	char name[NAME_LEN];
};

struct listing {
	int n;
	struct record r[MAX_ENTRIES];
};

static char failure[512];

/* Records why the running test failed; returns 1 so callers can return it. */
static int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(failure, sizeof(failure), fmt, ap);
	va_end(ap);
	return 1;
}

static void prep_getdents(struct io_uring_sqe *sqe, int fd, void *buf,
			  unsigned int len, int64_t off, uint64_t user_data)
{
	sqe->opcode = OP_GETDENTS;
	sqe->fd = fd;
	sqe->addr = (uintptr_t)buf;
	sqe->len = len;
	sqe->off = (uint64_t)off;
	sqe->user_data = user_data;
}

static void prep_statx(struct io_uring_sqe *sqe, int dfd, const char *path,
		       struct statx *stx)
{
	sqe->opcode = OP_STATX;
	sqe->fd = dfd;
	sqe->addr = (uintptr_t)path;
	sqe->len = STATX_BASIC_STATS;
	sqe->addr2 = (uintptr_t)stx;
	sqe->statx_flags = AT_SYMLINK_NOFOLLOW;
}

/* Submits the queued SQE and returns its result; its flags to *flags. */
static int submit_one_flags(struct ring *r, unsigned int *flags)
{
	struct io_uring_cqe cqe;
	int ret = ring_enter(r, 1, 1, IORING_ENTER_GETEVENTS);

	if (ret != 1) {
		fail("io_uring_enter submitted %d", ret);
		return INT32_MIN;
	}
	if (wait_cqe(r, &cqe)) {
		fail("waiting for a completion failed");
		return INT32_MIN;
	}
	*flags = cqe.flags;
	return cqe.res;
}

/* Submits the queued SQE and returns its result. */
static int submit_one(struct ring *r)
{
	unsigned int flags;

	return submit_one_flags(r, &flags);
}

static int getdents_once(struct ring *r, int fd, void *buf, unsigned int len,
			 int64_t off)
{
	prep_getdents(get_sqe(r), fd, buf, len, off, 1);
	return submit_one(r);
}

/* Appends the records of buf[0..len) to l; returns -1 if one is bad. */
static int parse(struct listing *l, const char *buf, int len)
{
	int pos = 0;

	while (pos < len) {
		const struct dirent64 *d = (const void *)(buf + pos);
		struct record *rec;

		if (d->d_reclen < offsetof(struct dirent64, d_name) + 2 ||
		    pos + d->d_reclen > len || d->d_reclen % 8 ||
		    l->n == MAX_ENTRIES)
			return -1;
		rec = &l->r[l->n++];
		rec->ino = d->d_ino;
		rec->off = d->d_off;
		rec->type = d->d_type;
		rec->ends_read = pos + d->d_reclen == len;
		snprintf(rec->name, sizeof(rec->name), "%s", d->d_name);
		pos += d->d_reclen;
	}
	return 0;
}

/* The whole directory by getdents64(2) from position 0. */
static int reference(int fd, struct listing *l)
{
	static char buf[1 << 16];
	int n;

	l->n = 0;
	if (lseek(fd, 0, SEEK_SET) != 0)
		return fail("lseek: %s", strerror(errno));
	while ((n = syscall(__NR_getdents64, fd, buf, sizeof(buf))) > 0) {
		if (parse(l, buf, n))
			return fail("getdents64 returned a bad record");
	}
	if (n < 0)
		return fail("getdents64: %s", strerror(errno));
	return 0;
}

static int same_record(const struct record *a, const struct record *b)
{
	return a->ino == b->ino && a->off == b->off && a->type == b->type &&
	       !strcmp(a->name, b->name);
}

/* Whether the scratch directory's filesystem may end a read short. */
static int short_ok;

/*
 * Whether the series covers the scratch directory's filesystem (tmpfs,
 * ext4, XFS, btrfs): it reads cached directories and stats cached names
 * without blocking (0005, 0007-0009, 0014-0015). Any other (overlayfs)
 * does not: its GETDENTS, STATX and readdirplus lookups go to io-wq, and
 * the dcache-only lookups answer -EAGAIN (its ->getattr() may wait).
 */
static int fs_in_series;

/*
 * Whether reads report the end of the directory (0006, 0016 for btrfs):
 * on the series' filesystems, and on overlayfs, which reads a directory
 * that lives in one layer through that layer's ->iterate_shared() with the
 * caller's context (the tests' directories are new, so in the upper layer,
 * on ext4).
 */
static int fs_reports_eof;

/* The scratch directory's filesystem type (fs_magic()). */
static unsigned int fs_type;

static int series_covers(unsigned int type, int *reports_eof)
{
	int covered = type == TMPFS_MAGIC || type == EXT4_SUPER_MAGIC ||
		      type == XFS_SUPER_MAGIC || type == BTRFS_SUPER_MAGIC;

	*reports_eof = covered || type == OVERLAYFS_SUPER_MAGIC;
	return covered;
}

/*
 * btrfs keeps a directory's new entries as delayed items until its
 * transaction commits, and reads them with the inode lock taken
 * exclusively, which a read that must not wait does not take (0015): such
 * a read goes to io-wq. Commits them there, for a test of inline reads.
 */
static int commit_entries(int dfd)
{
	if (fs_type == BTRFS_SUPER_MAGIC && syncfs(dfd))
		return fail("syncfs: %s", strerror(errno));
	return 0;
}

static int compare(const struct listing *got, const struct listing *want,
		   const char *what)
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
				    what, i, got->r[i].name,
				    (long long)got->r[i].off, want->r[i].name,
				    (long long)want->r[i].off);
	}
	if (got->n != want->n)
		return fail("%s: %d records, expected %d", what, got->n,
			    want->n);
	return 0;
}

static char base[PATH_MAX];
static int base_fd = -1;

/* Makes base/name with n files of name lengths 1..200, a dir, a symlink. */
/*
 * Rewinds dfd, as rewinddir(3) does: btrfs lists only the entries that
 * existed when the directory was opened or last rewound (btrfs_opendir()
 * and btrfs_dir_llseek() read its last index), for GETDENTS as for
 * getdents64(2).
 */
static int rewind_dir(int dfd)
{
	if (lseek(dfd, 0, SEEK_SET) != 0)
		return fail("lseek: %s", strerror(errno));
	return 0;
}

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
		int len = 6 + (i * 37) % 195, fd;

		snprintf(file, sizeof(file), "%05d-", i);
		memset(file + 6, 'n', len - 6);
		file[len] = '\0';
		fd = openat(dfd, file, O_CREAT | O_WRONLY, 0600);
		if (fd < 0)
			return fail("create %s: %s", file, strerror(errno));
		close(fd);
	}
	if (mkdirat(dfd, "sub", 0700) || symlinkat("sub", dfd, "link"))
		return fail("mkdir/symlink in %s: %s", path, strerror(errno));
	*fd_out = dfd;
	return rewind_dir(dfd);
}

static struct ring ring;

static int test_chained_by_d_off(void)
{
	static struct listing want, got;
	static char buf[8192];
	unsigned int lens[] = { 280, 1000, 8192 };
	int dfd, i;

	if (make_dir("chained", 300, &dfd) || reference(dfd, &want))
		return 1;
	for (i = 0; i < 3; i++) {
		int64_t off = 0;
		int res;

		got.n = 0;
		while ((res = getdents_once(&ring, dfd, buf, lens[i], off)) > 0) {
			if (parse(&got, buf, res))
				return fail("bad record from GETDENTS");
			off = got.r[got.n - 1].off;
		}
		if (res < 0)
			return fail("GETDENTS from %lld: %d", (long long)off, res);
		if (compare(&got, &want, "chained by d_off"))
			return 1;
	}
	close(dfd);
	return 0;
}

/* The size of a record in the buffer, as the kernel lays it out. */
static int reclen(const struct record *rec)
{
	int len = offsetof(struct dirent64, d_name) + strlen(rec->name) + 1;

	return (len + 7) & ~7;
}

/*
 * Lists dfd by reads of len bytes chained by d_off until one returns 0;
 * fails unless the records are want's and IORING_CQE_F_DIR_EOF is set on
 * the read whose records end the listing, on the read of 0 bytes after
 * it, and on no other (on no read at all where the filesystem does not
 * report the end). The number of reads with records goes to *reads.
 */
static int eof_on_last_read(int dfd, const struct listing *want,
			    unsigned int len, int *reads)
{
	static struct listing got;
	static char buf[1 << 16];
	unsigned int flags;
	int64_t off = 0;
	int res, eof;

	got.n = 0;
	*reads = 0;
	if (len > sizeof(buf))
		return fail("buffer of %u bytes is too large for the test", len);
	for (;;) {
		prep_getdents(get_sqe(&ring), dfd, buf, len, off, 1);
		res = submit_one_flags(&ring, &flags);
		if (res < 0)
			return fail("GETDENTS from %lld into %u: %d",
				    (long long)off, len, res);
		eof = !!(flags & IORING_CQE_F_DIR_EOF);
		if (res == 0)
			break;
		++*reads;
		if (parse(&got, buf, res))
			return fail("bad record from GETDENTS");
		if (eof != (fs_reports_eof && got.n == want->n))
			return fail("buffer %u, read %d ends at record %d of %d with the flag %s",
				    len, *reads, got.n, want->n,
				    eof ? "set" : "not set");
		off = got.r[got.n - 1].off;
	}
	if (eof != fs_reports_eof)
		return fail("buffer %u: a read of 0 bytes %s the flag", len,
			    eof ? "with" : "without");
	return compare(&got, want, "read up to IORING_CQE_F_DIR_EOF");
}

static int test_dir_eof(void)
{
	static struct listing want;
	static const int sizes[] = { 0, 10, 300 };
	static const char *names[] = { "eof-small", "eof-10", "eof-300" };
	int i, j, reads;

	for (i = 0; i < 3; i++) {
		unsigned int total = 0, last, half = 0, largest = 0;
		unsigned int lens[4] = { 280, 1000 };
		int dfd;

		if (make_dir(names[i], sizes[i], &dfd) || reference(dfd, &want))
			return 1;
		for (j = 0; j < want.n; j++) {
			total += reclen(&want.r[j]);
			if (reclen(&want.r[j]) > (int)largest)
				largest = reclen(&want.r[j]);
			if (j < want.n / 2)
				half += reclen(&want.r[j]);
		}
		last = reclen(&want.r[want.n - 1]);
		/* Room to spare, and a buffer the whole listing fills exactly. */
		if (eof_on_last_read(dfd, &want, total + 512, &reads))
			return 1;
		if (reads != 1)
			return fail("%s: %d reads with room to spare", names[i], reads);
		if (eof_on_last_read(dfd, &want, total, &reads))
			return 1;
		if (reads != 1)
			return fail("%s: %d reads into an exact buffer", names[i], reads);
		/* One record short: the last one comes alone, with the flag. */
		if (eof_on_last_read(dfd, &want, total - last, &reads))
			return 1;
		if (reads != 2)
			return fail("%s: %d reads one record short", names[i], reads);
		/* Full reads that end after a record in the middle. */
		lens[2] = half < largest ? largest : half;
		lens[3] = 4096;
		for (j = 0; j < 4; j++) {
			if (eof_on_last_read(dfd, &want, lens[j], &reads))
				return 1;
		}
		close(dfd);
	}
	return 0;
}

static int test_offset_minus_one(void)
{
	static struct listing want, got;
	static char buf[512];
	int dfd, res, half;

	if (make_dir("minus-one", 200, &dfd) || reference(dfd, &want))
		return 1;

	/* From position 0, -1 reads on where the last read stopped. */
	if (lseek(dfd, 0, SEEK_SET) != 0)
		return fail("lseek: %s", strerror(errno));
	got.n = 0;
	while ((res = getdents_once(&ring, dfd, buf, sizeof(buf), -1)) > 0) {
		off_t pos;

		if (parse(&got, buf, res))
			return fail("bad record from GETDENTS");
		/* f_pos is left after the last record returned. */
		pos = lseek(dfd, 0, SEEK_CUR);
		if (pos != got.r[got.n - 1].off)
			return fail("f_pos %lld after a read, last d_off %lld",
				    (long long)pos,
				    (long long)got.r[got.n - 1].off);
	}
	if (res < 0)
		return fail("GETDENTS at -1: %d", res);
	if (compare(&got, &want, "reads at -1"))
		return 1;

	/* -1 continues where getdents64(2) stopped, and the reverse. */
	half = want.n / 2;
	if (lseek(dfd, want.r[half - 1].off, SEEK_SET) < 0)
		return fail("lseek: %s", strerror(errno));
	res = getdents_once(&ring, dfd, buf, sizeof(buf), -1);
	got.n = 0;
	if (res <= 0 || parse(&got, buf, res))
		return fail("GETDENTS at -1 after lseek: %d", res);
	if (!same_record(&got.r[0], &want.r[half]))
		return fail("-1 after lseek to the d_off of record %d read %s",
			    half - 1, got.r[0].name);
	res = syscall(__NR_getdents64, dfd, buf, sizeof(buf));
	if (res <= 0)
		return fail("getdents64 after GETDENTS: %d", res);
	if (((struct dirent64 *)buf)->d_ino != want.r[half + got.n].ino)
		return fail("getdents64 did not resume after GETDENTS at -1");

	/* After the end, -1 keeps returning 0. */
	if (lseek(dfd, want.r[want.n - 1].off, SEEK_SET) < 0)
		return fail("lseek: %s", strerror(errno));
	res = getdents_once(&ring, dfd, buf, sizeof(buf), -1);
	if (res != 0)
		return fail("GETDENTS at -1 at the end: %d", res);
	close(dfd);
	return 0;
}

static int test_linked_reads(void)
{
	static struct listing want, got;
	enum { MAX_LINKS = 60, LEN = 600 };
	static char bufs[MAX_LINKS][LEN];
	struct io_uring_cqe cqe;
	int res[MAX_LINKS], dfd, i, ret, links, bytes = 0;
	uint64_t seen = 0;

	if (make_dir("linked", 100, &dfd) || reference(dfd, &want))
		return 1;
	/* Enough reads to pass the end: each fills at least half its buffer. */
	for (i = 0; i < want.n; i++)
		bytes += (offsetof(struct dirent64, d_name) +
			  strlen(want.r[i].name) + 1 + 7) & ~7;
	links = bytes / (LEN / 2) + 3;
	if (links > MAX_LINKS)
		return fail("%d links needed, room for %d", links, MAX_LINKS);
	if (lseek(dfd, 0, SEEK_SET) != 0)
		return fail("lseek: %s", strerror(errno));
	for (i = 0; i < links; i++) {
		struct io_uring_sqe *sqe = get_sqe(&ring);

		prep_getdents(sqe, dfd, bufs[i], LEN, -1, i);
		if (i < links - 1)
			sqe->flags |= IOSQE_IO_LINK;
	}
	ret = ring_enter(&ring, links, links, IORING_ENTER_GETEVENTS);
	if (ret != links)
		return fail("io_uring_enter submitted %d of %d", ret, links);
	for (i = 0; i < links; i++) {
		if (wait_cqe(&ring, &cqe))
			return 1;
		if (cqe.user_data >= (uint64_t)links ||
		    (seen & (1ULL << cqe.user_data)))
			return fail("unexpected completion %llu",
				    (unsigned long long)cqe.user_data);
		seen |= 1ULL << cqe.user_data;
		res[cqe.user_data] = cqe.res;
	}
	/* The chain read the directory in order; the tail read 0s. */
	got.n = 0;
	for (i = 0; i < links; i++) {
		if (res[i] < 0)
			return fail("linked read %d: %d", i, res[i]);
		if (res[i] > 0 && i && res[i - 1] == 0)
			return fail("linked read %d returned data after an end", i);
		if (parse(&got, bufs[i], res[i]))
			return fail("bad record from a linked read");
	}
	if (res[links - 1] != 0)
		return fail("%d linked reads of %d bytes did not reach the end",
			    links, LEN);
	if (compare(&got, &want, "linked reads at -1"))
		return 1;
	close(dfd);
	return 0;
}

static int test_reserved_bytes_einval(void)
{
	/* ioprio, rw_flags, buf_index, file_index, addr3, __pad2[0] */
	static const struct { int start, end; } ranges[] = {
		{ 2, 4 }, { 28, 32 }, { 40, 42 }, { 44, 48 }, { 48, 64 },
	};
	static char buf[4096];
	int dfd, i, b, res, checked = 0;

	if (make_dir("reserved", 3, &dfd))
		return 1;
	res = getdents_once(&ring, dfd, buf, sizeof(buf), 0);
	if (res <= 0)
		return fail("GETDENTS with reserved fields zero: %d", res);
	for (i = 0; i < 5; i++) {
		for (b = ranges[i].start; b < ranges[i].end; b++) {
			struct io_uring_sqe *sqe = get_sqe(&ring);

			prep_getdents(sqe, dfd, buf, sizeof(buf), 0, 2);
			((unsigned char *)sqe)[b] = 0x80;
			res = submit_one(&ring);
			if (res != -EINVAL)
				return fail("SQE byte %d set: %d, expected -EINVAL",
					    b, res);
			checked++;
		}
	}
	if (checked != 2 + 4 + 2 + 4 + 16)
		return fail("checked %d bytes", checked);
	close(dfd);
	return 0;
}

static int test_bad_offsets(void)
{
	static char buf[4096];
	int dfd, res;

	if (make_dir("bad-offsets", 3, &dfd))
		return 1;
	/* The filesystem's ->llseek() judges, as for lseek(2). */
	res = getdents_once(&ring, dfd, buf, sizeof(buf), -2);
	if (lseek(dfd, -2, SEEK_SET) != -1 || errno != EINVAL)
		return fail("lseek(-2) did not fail with EINVAL");
	if (res != -EINVAL)
		return fail("GETDENTS at -2: %d, expected -EINVAL", res);
	/* A buffer too small for one record, as getdents64(2). */
	res = getdents_once(&ring, dfd, buf, 20, 0);
	if (res != -EINVAL)
		return fail("GETDENTS into 20 bytes: %d, expected -EINVAL", res);
	close(dfd);
	return 0;
}

static int test_enotdir(void)
{
	static char buf[4096];
	char path[PATH_MAX + 16];
	int fd, pipefd[2], res;

	snprintf(path, sizeof(path), "%s/file", base);
	fd = open(path, O_CREAT | O_RDWR, 0600);
	if (fd < 0)
		return fail("create %s: %s", path, strerror(errno));
	res = getdents_once(&ring, fd, buf, sizeof(buf), 0);
	close(fd);
	if (res != -ENOTDIR)
		return fail("regular file: %d, expected -ENOTDIR", res);
	if (pipe(pipefd))
		return fail("pipe: %s", strerror(errno));
	res = getdents_once(&ring, pipefd[0], buf, sizeof(buf), -1);
	close(pipefd[0]);
	close(pipefd[1]);
	if (res != -ENOTDIR)
		return fail("pipe: %d, expected -ENOTDIR", res);
	return 0;
}

static int test_efault(void)
{
	void *ro;
	int dfd, res;

	if (make_dir("efault", 3, &dfd))
		return 1;
	res = getdents_once(&ring, dfd, (void *)16, 4096, 0);
	if (res != -EFAULT)
		return fail("unmapped buffer: %d, expected -EFAULT", res);
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED)
		return fail("mmap: %s", strerror(errno));
	res = getdents_once(&ring, dfd, ro, 4096, -1);
	munmap(ro, 4096);
	if (res != -EFAULT)
		return fail("read-only buffer: %d, expected -EFAULT", res);
	close(dfd);
	return 0;
}

static int count_name(const struct listing *l, const char *name)
{
	int i, n = 0;

	for (i = 0; i < l->n; i++)
		n += !strcmp(l->r[i].name, name);
	return n;
}

/*
 * Entries created and removed between reads may or may not be listed
 * (POSIX leaves it open), but every entry that stays must come exactly
 * once, whether the reads go on by d_off or at -1.
 */
static int test_changed_between_reads(void)
{
	static struct listing before, got;
	static char buf[1024];
	int dfd, pass, i, res;

	for (pass = 0; pass < 2; pass++) {
		char name[32];
		int64_t off = 0;
		int first;

		snprintf(name, sizeof(name), "changed-%d", pass);
		if (make_dir(name, 300, &dfd) || reference(dfd, &before))
			return 1;
		got.n = 0;
		res = getdents_once(&ring, dfd, buf, sizeof(buf), 0);
		if (res <= 0 || parse(&got, buf, res))
			return fail("first read: %d", res);
		first = got.n;
		off = got.r[got.n - 1].off;
		/* Remove every third entry, listed or not; add 100. */
		for (i = 0; i < before.n; i += 3) {
			if (before.r[i].name[0] != '0')
				continue;
			if (unlinkat(dfd, before.r[i].name, 0))
				return fail("unlink: %s", strerror(errno));
		}
		for (i = 0; i < 100; i++) {
			char file[32];
			int fd;

			snprintf(file, sizeof(file), "new-%d", i);
			fd = openat(dfd, file, O_CREAT | O_WRONLY, 0600);
			if (fd < 0)
				return fail("create: %s", strerror(errno));
			close(fd);
		}
		while ((res = getdents_once(&ring, dfd, buf, sizeof(buf),
					    pass ? -1 : off)) > 0) {
			if (parse(&got, buf, res))
				return fail("bad record");
			off = got.r[got.n - 1].off;
		}
		if (res < 0)
			return fail("read after the change: %d", res);
		for (i = 0; i < before.n; i++) {
			const char *n = before.r[i].name;
			int removed = i % 3 == 0 && n[0] == '0';
			int times = count_name(&got, n);

			if (!removed && times != 1)
				return fail("%s: kept entry %s listed %d times",
					    pass ? "-1" : "d_off", n, times);
			if (removed && i < first && times != 1)
				return fail("entry %s read before its removal listed %d times",
					    n, times);
			if (times > 1)
				return fail("entry %s listed %d times", n, times);
		}
		for (i = 0; i < 100; i++) {
			char file[32];

			snprintf(file, sizeof(file), "new-%d", i);
			if (count_name(&got, file) > 1)
				return fail("new entry %s listed twice", file);
		}
		close(dfd);
	}
	return 0;
}

/* IN_ACCESS events of watch wd queued on in since the last call. */
static int access_events(int in, int wd)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t len;
	int n = 0;

	while ((len = read(in, buf, sizeof(buf))) > 0) {
		char *p = buf;

		while (p < buf + len) {
			const struct inotify_event *ev = (const void *)p;

			n += ev->wd == wd && (ev->mask & IN_ACCESS);
			p += sizeof(*ev) + ev->len;
		}
	}
	return len < 0 && errno != EAGAIN ? -1 : n;
}

/*
 * Every read fires fsnotify_access() once: each getdents64(2) call, and
 * each GETDENTS request, also one whose records reach the end and that
 * carries IORING_CQE_F_DIR_EOF. The parent is watched too: inotify merges an event with an identical one queued
 * right before it, and the parent's event in between keeps them apart.
 */
static int test_access_events_once_per_read(void)
{
	static char buf[1 << 16];
	char path[PATH_MAX + 16];
	unsigned int flags;
	int dfd, in, wd, calls = 0, res, events;

	if (make_dir("notify", 20, &dfd))
		return 1;
	snprintf(path, sizeof(path), "%s/notify", base);
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (in < 0)
		return fail("inotify_init1: %s", strerror(errno));
	wd = inotify_add_watch(in, path, IN_ACCESS);
	if (wd < 0 || inotify_add_watch(in, base, IN_ACCESS) < 0)
		return fail("inotify_add_watch: %s", strerror(errno));
	/* getdents64(2) in reads of 512 bytes, down to the one returning 0. */
	do {
		res = syscall(__NR_getdents64, dfd, buf, 512);
		calls++;
		events = access_events(in, wd);
		if (res < 0 || events != 1)
			return fail("getdents64 call %d: %d, %d IN_ACCESS events, expected 1",
				    calls, res, events);
	} while (res > 0);
	/* GETDENTS: a partial read, one that reaches the end, one at it. */
	{
		const struct { int64_t off; unsigned int len; int eof; } reads[] = {
			{ 0, 512, 0 }, { -1, sizeof(buf), 1 }, { -1, sizeof(buf), 1 },
		};
		unsigned int i;

		if (lseek(dfd, 0, SEEK_SET) != 0)
			return fail("lseek: %s", strerror(errno));
		access_events(in, wd);
		for (i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
			prep_getdents(get_sqe(&ring), dfd, buf, reads[i].len,
				      reads[i].off, 1);
			res = submit_one_flags(&ring, &flags);
			events = access_events(in, wd);
			if (res < 0 || !!(flags & IORING_CQE_F_DIR_EOF) !=
			    (reads[i].eof && fs_reports_eof))
				return fail("GETDENTS read %u: %d, flags 0x%x", i + 1,
					    res, flags);
			if (events != 1)
				return fail("GETDENTS read %u (%d bytes, end %s): %d IN_ACCESS events, expected 1",
					    i + 1, res, reads[i].eof ? "reached" : "not reached",
					    events);
		}
	}
	close(in);
	close(dfd);
	return 0;
}

/*
 * A GETDENTS read that reaches the end (IORING_CQE_F_DIR_EOF) is the
 * getdents64(2) call of the same size from the same position, to the byte:
 * the same records, the same d_off on the last one, the same file position
 * afterwards and as many IN_ACCESS events. Learning the end must not cost
 * the directory another iteration, which on some filesystems moves the
 * position past its end marker or notifies the access again. The sizes
 * give XFS a shortform, a block and a leaf directory, and ext4 one block
 * and an htree.
 */
static int test_end_read_as_getdents64(void)
{
	static char want[1 << 16], got[1 << 16];
	static const int sizes[] = { 0, 10, 300 };
	char name[32], path[PATH_MAX + 48];
	unsigned int flags;
	int i, dfd, in, wd, n64, n, ev64, ev;
	off_t pos64, pos;

	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (in < 0)
		return fail("inotify_init1: %s", strerror(errno));
	/* The parent's events keep two of the directory's from merging. */
	if (inotify_add_watch(in, base, IN_ACCESS) < 0)
		return fail("inotify_add_watch: %s", strerror(errno));
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "as-getdents64-%d", sizes[i]);
		if (make_dir(name, sizes[i], &dfd))
			return 1;
		snprintf(path, sizeof(path), "%s/%s", base, name);
		wd = inotify_add_watch(in, path, IN_ACCESS);
		if (wd < 0)
			return fail("inotify_add_watch: %s", strerror(errno));
		access_events(in, wd);
		n64 = syscall(__NR_getdents64, dfd, want, sizeof(want));
		ev64 = access_events(in, wd);
		pos64 = lseek(dfd, 0, SEEK_CUR);
		if (n64 <= 0 || pos64 < 0 || lseek(dfd, 0, SEEK_SET) != 0)
			return fail("%s: getdents64 %d, position %lld", name, n64,
				    (long long)pos64);
		access_events(in, wd);
		prep_getdents(get_sqe(&ring), dfd, got, sizeof(got), -1, 1);
		n = submit_one_flags(&ring, &flags);
		ev = access_events(in, wd);
		pos = lseek(dfd, 0, SEEK_CUR);
		if (n != n64 || memcmp(got, want, n64)) {
			static struct listing a, b;

			a.n = b.n = 0;
			parse(&a, got, n > 0 ? n : 0);
			parse(&b, want, n64);
			return fail("%s: GETDENTS gave %d bytes (%d records, the last %s at %lld), getdents64 %d (%d, the last %s at %lld)",
				    name, n, a.n, a.n ? a.r[a.n - 1].name : "-",
				    a.n ? (long long)a.r[a.n - 1].off : -1LL, n64,
				    b.n, b.n ? b.r[b.n - 1].name : "-",
				    b.n ? (long long)b.r[b.n - 1].off : -1LL);
		}
		if (!!(flags & IORING_CQE_F_DIR_EOF) != fs_reports_eof)
			return fail("%s: read to the end %s the flag (0x%x)", name,
				    fs_reports_eof ? "without" : "with", flags);
		if (pos != pos64)
			return fail("%s: position %lld after GETDENTS, %lld after getdents64",
				    name, (long long)pos, (long long)pos64);
		if (ev != ev64 || ev != 1)
			return fail("%s: %d IN_ACCESS events from GETDENTS, %d from getdents64",
				    name, ev, ev64);
		inotify_rm_watch(in, wd);
		close(dfd);
	}
	close(in);
	return 0;
}

/*
 * ext4 hands out 32-bit directory positions to 32-bit tasks and 64-bit
 * ones to others, by in_compat_syscall(). GETDENTS from a 32-bit task runs
 * in io-wq workers that it forked in io_uring_enter(2): they inherit its
 * TS_COMPAT (nothing clears it before a return to user mode, which a
 * worker never makes), so they must hand out the positions getdents64(2)
 * gives the same task. The width is checked first, so that a run built
 * as i386 proves it ran as a 32-bit task.
 */
static int test_d_off_width(void)
{
	static struct listing want, got;
	static char buf[4096];
	struct statfs sfs;
	int64_t off = 0, widest = 0;
	int dfd, i, res;

	if (make_dir("width", 300, &dfd) || reference(dfd, &want) ||
	    fstatfs(dfd, &sfs))
		return 1;
	if (sfs.f_type != EXT4_SUPER_MAGIC) {
		close(dfd);
		return 0;
	}
	/* The last record's d_off is ext4's end marker; the others, hashes. */
	for (i = 0; i < want.n - 1; i++)
		if (want.r[i].off > widest)
			widest = want.r[i].off;
	if (sizeof(long) == 4 && widest > INT32_MAX)
		return fail("32-bit task: getdents64 gave d_off 0x%llx, wider than 31 bits",
			    (long long)widest);
	if (sizeof(long) == 8 && widest <= (int64_t)UINT32_MAX)
		return fail("64-bit task: no getdents64 d_off wider than 32 bits");
	/* Every read forced to an io-wq worker, chained by d_off. */
	got.n = 0;
	for (;;) {
		struct io_uring_sqe *sqe = get_sqe(&ring);

		prep_getdents(sqe, dfd, buf, sizeof(buf), off, 1);
		sqe->flags |= IOSQE_ASYNC;
		res = submit_one(&ring);
		if (res <= 0)
			break;
		if (parse(&got, buf, res))
			return fail("bad record from GETDENTS");
		off = got.r[got.n - 1].off;
	}
	if (res < 0)
		return fail("GETDENTS in io-wq from %lld: %d", (long long)off, res);
	close(dfd);
	return compare(&got, &want, "GETDENTS in io-wq against getdents64");
}

/* The io-wq workers of this process: threads named iou-wrk-<pid>. */
static int count_iowq_workers(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], comm[32] = "";
		int fd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 e->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		if (read(fd, comm, sizeof(comm) - 1) > 0 &&
		    !strncmp(comm, "iou-wrk-", 8))
			n++;
		close(fd);
	}
	closedir(d);
	return n;
}

/* Runs fn(dfd, want) in a child; its failure comes back through a pipe. */
static int in_child(int (*fn)(int, const struct listing *), int dfd,
		    const struct listing *want)
{
	int pipefd[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe(pipefd))
		return fail("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		return fail("fork: %s", strerror(errno));
	if (pid == 0) {
		int ret = fn(dfd, want);

		if (ret && write(pipefd[1], failure, strlen(failure)) < 0)
			ret = 2;
		_exit(ret);
	}
	close(pipefd[1]);
	n = read(pipefd[0], failure, sizeof(failure) - 1);
	failure[n > 0 ? n : 0] = '\0';
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) != pid)
		return fail("waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return failure[0] ? 1 : fail("child status 0x%x", status);
	return 0;
}

#if defined(__x86_64__)
/*
 * io_uring_enter(2) made as a 32-bit system call (int $0x80, i386 number
 * 426) by this 64-bit task: the kernel runs it with TS_COMPAT set, as for
 * an i386 program. Registers of the i386 convention: ebx, ecx, edx, esi,
 * edi, ebp; sig (edi) and sigsz (ebp) are 0. The stack pointer steps over
 * the red zone before ebp is saved on the stack.
 */
static int ring_enter_int80(struct ring *r, unsigned int submit,
			    unsigned int wait, unsigned int flags)
{
	long ret;

	__asm__ volatile("sub $128, %%rsp\n\t"
			 "push %%rbp\n\t"
			 "xor %%ebp, %%ebp\n\t"
			 "int $0x80\n\t"
			 "pop %%rbp\n\t"
			 "add $128, %%rsp"
			 : "=a"(ret)
			 : "0"(426L), "b"((long)r->fd), "c"((long)submit),
			   "d"((long)wait), "S"((long)flags), "D"(0L)
			 : "memory", "cc", "r8", "r9", "r10", "r11");
	return (int)ret;
}

/*
 * One GETDENTS forced to io-wq from off; its records are appended to got.
 * With compat, submitted by ring_enter_int80(). Returns the result.
 */
static int width_read(struct ring *r, int dfd, int64_t off, int compat,
		      struct listing *got)
{
	static char buf[4096];
	struct io_uring_sqe *sqe = get_sqe(r);
	struct io_uring_cqe cqe;
	int ret;

	prep_getdents(sqe, dfd, buf, sizeof(buf), off, 1);
	sqe->flags |= IOSQE_ASYNC;
	ret = compat ? ring_enter_int80(r, 1, 1, IORING_ENTER_GETEVENTS) :
		       ring_enter(r, 1, 1, IORING_ENTER_GETEVENTS);
	if (ret != 1)
		return fail("io_uring_enter%s submitted %d",
			    compat ? " (int $0x80)" : "", ret);
	if (wait_cqe(r, &cqe))
		return fail("waiting for a completion failed");
	if (cqe.res > 0 && parse(got, buf, cqe.res))
		return fail("bad record from GETDENTS");
	return cqe.res;
}

/* In a child, a task with no io-wq yet: see test_ring_width_in_iowq(). */
static int ring_width_child(int dfd, const struct listing *want)
{
	static struct listing got, part;
	struct ring r;
	int64_t off = 0;
	int i, k, res, compat = 1;

	if (ring_init(&r, 8, 0))
		return fail("io_uring_setup in the child");
	if (lseek(dfd, 0, SEEK_SET) != 0)
		return fail("lseek: %s", strerror(errno));
	/* Chained by d_off; the first read forks the worker (compat). */
	got.n = 0;
	while ((res = width_read(&r, dfd, off, compat, &got)) > 0) {
		off = got.r[got.n - 1].off;
		compat = 0;
	}
	if (res < 0)
		return fail("GETDENTS in io-wq from %lld%s: %d", (long long)off,
			    compat ? ", the first, worker forked in int $0x80" : "",
			    res);
	if (compare(&got, want, "GETDENTS of a 64-bit ring, its worker forked in a compat io_uring_enter, against getdents64"))
		return 1;
	/* From d_off values getdents64 gave, each after a seek back to 0. */
	for (k = 1; k < want->n - 1; k += want->n / 5 + 1) {
		if (lseek(dfd, 0, SEEK_SET) != 0)
			return fail("lseek: %s", strerror(errno));
		part.n = 0;
		res = width_read(&r, dfd, want->r[k].off, 0, &part);
		if (res <= 0)
			return fail("GETDENTS in io-wq from getdents64's d_off 0x%llx: %d",
				    (long long)want->r[k].off, res);
		for (i = 0; i < part.n; i++)
			if (k + 1 + i >= want->n ||
			    !same_record(&part.r[i], &want->r[k + 1 + i]))
				return fail("GETDENTS from d_off 0x%llx: record %d is %s (d_off 0x%llx), expected getdents64's record %d",
					    (long long)want->r[k].off, i,
					    part.r[i].name,
					    (long long)part.r[i].off, k + 1 + i);
	}
	return 0;
}

/*
 * The width of ext4's positions in io-wq is the ring's, not the worker's.
 * A worker inherits TS_COMPAT from the task that forks it, in whatever
 * system call that task is making: here a 64-bit task makes its ring's
 * first punt through a 32-bit io_uring_enter (int $0x80), and the worker
 * it forks there reads every later request of the ring too. Every read
 * must give the records and d_off values of the task's own getdents64(2),
 * 64-bit hash positions, chained by d_off and from d_off values taken
 * from getdents64 (a seek, validated by ext4 with the same width). Only
 * on ext4 with htree (hash positions), only as a 64-bit program.
 */
static int test_ring_width_in_iowq(void)
{
	static struct listing want;
	struct statfs sfs;
	int dfd, i, wide = 0;

	if (make_dir("ring-width", 300, &dfd) || fstatfs(dfd, &sfs))
		return 1;
	if (sfs.f_type != EXT4_SUPER_MAGIC) {
		close(dfd);
		return 0;
	}
	if (reference(dfd, &want))
		return 1;
	for (i = 0; i < want.n - 1; i++)
		wide |= want.r[i].off > (int64_t)UINT32_MAX;
	if (!wide)
		return fail("getdents64 gave no d_off wider than 32 bits: not an htree directory");
	i = in_child(ring_width_child, dfd, &want);
	close(dfd);
	return i;
}
#endif

/*
 * In a child process with a ring of its own, so no io-wq worker exists
 * yet: a request punted to io-wq creates one, a request completed inline
 * does not.
 */
static int inline_child(int dfd, const struct listing *want)
{
	static struct listing got;
	static char buf[8192];
	struct io_uring_sqe *sqe;
	struct statx stx;
	struct stat st;
	int i, res, workers;

	if (ring_init(&ring, 8, 0))
		return fail("io_uring_setup in the child");
	if (fstatat(dfd, "sub", &st, AT_SYMLINK_NOFOLLOW))
		return fail("stat: %s", strerror(errno));

	/*
	 * STATX of a name in the dcache completes inline on tmpfs, ext4 and
	 * XFS (LOOKUP_CACHED lookup; FS_GETATTR_NOWAIT: getattr of the
	 * in-memory inode), and so does a negative dentry's -ENOENT. Any
	 * other filesystem's ->getattr() may wait: never called inline.
	 */
	for (i = 0; i < 8; i++) {
		prep_statx(get_sqe(&ring), dfd, "sub", &stx);
		res = submit_one(&ring);
		if (res != 0 || stx.stx_ino != st.st_ino)
			return fail("STATX: %d, inode %llu, expected %llu", res,
				    (unsigned long long)stx.stx_ino,
				    (unsigned long long)st.st_ino);
	}
	workers = count_iowq_workers();
	if (!fs_in_series)
		return workers ? 0 : fail("STATX inline on a filesystem without FS_GETATTR_NOWAIT");
	if (workers != 0)
		return fail("%d io-wq workers after STATX of a cached name",
			    workers);

	/*
	 * GETDENTS of a directory in cache completes inline when the read
	 * needs no seek: tmpfs never waits to read a directory, ext4 and XFS
	 * read cached blocks without waiting (patches 0007-0009). The
	 * directory was read before, so no atime update is due either.
	 */
	for (i = 0; i < 8; i++) {
		if (lseek(dfd, 0, SEEK_SET) != 0)
			return fail("lseek: %s", strerror(errno));
		res = getdents_once(&ring, dfd, buf, sizeof(buf), 0);
		if (res <= 0)
			return fail("GETDENTS: %d", res);
		got.n = 0;
		if (parse(&got, buf, res) || !same_record(&got.r[0], &want->r[0]))
			return fail("GETDENTS: the first record is not getdents64's");
	}
	workers = count_iowq_workers();
	if (workers != 0)
		return fail("%d io-wq workers after GETDENTS of a cached directory",
			    workers);
	/* IOSQE_ASYNC goes to io-wq: the count sees punted requests. */
	sqe = get_sqe(&ring);
	prep_getdents(sqe, dfd, buf, sizeof(buf), -1, 1);
	sqe->flags |= IOSQE_ASYNC;
	res = submit_one(&ring);
	if (res < 0)
		return fail("GETDENTS with IOSQE_ASYNC: %d", res);
	if (count_iowq_workers() == 0)
		return fail("no io-wq worker after GETDENTS with IOSQE_ASYNC: the count cannot see punted requests");
	return 0;
}

static int test_inline_completion(void)
{
	static struct listing want;
	struct timespec tick = { 0, 50 * 1000 * 1000 };
	int dfd;

	if (make_dir("inline", 50, &dfd) || commit_entries(dfd))
		return 1;
	/*
	 * Read it once a jiffy after its last change: the atime update that
	 * read makes is the last one due (relatime), and its blocks are
	 * cached.
	 */
	nanosleep(&tick, NULL);
	if (reference(dfd, &want) || in_child(inline_child, dfd, &want))
		return 1;
	close(dfd);
	return 0;
}

/*
 * Readdirplus (IORING_GETDENTS_PLUS): records carry the entry's statx.
 */
#ifndef IORING_GETDENTS_PLUS
#define IORING_GETDENTS_PLUS	(1U << 0)
#endif
#ifndef IORING_GETDENTS_PLUS_DCACHE
#define IORING_GETDENTS_PLUS_DCACHE	(1U << 1)
#endif
/* The error code and its padding, then the struct statx. */
#define PLUS_TAIL	(8 + (int)sizeof(struct statx))
#define PLUS_MASK	(STATX_BASIC_STATS | STATX_BTIME)

struct plus_record {
	struct record d;
	int error;
	struct statx stx;
};

struct plus_listing {
	int n;
	struct plus_record r[MAX_ENTRIES];
};

/* IOSQE_ASYNC here sends readdirplus reads to io-wq, where lookups block. */
static unsigned int plus_sqe_flags;
/* IORING_GETDENTS_PLUS_DCACHE here: lookups from the dcache only. */
static unsigned int plus_dcache;
/* The statx mask readdirplus reads ask for, and check_plus() compares. */
static unsigned int plus_mask = PLUS_MASK;

static void prep_getdents_plus(struct io_uring_sqe *sqe, int fd, void *buf,
			       unsigned int len, int64_t off)
{
	prep_getdents(sqe, fd, buf, len, off, 1);
	sqe->flags = plus_sqe_flags;
	sqe->rw_flags = IORING_GETDENTS_PLUS | plus_dcache;
	sqe->file_index = plus_mask;
}

/*
 * Appends the readdirplus records of buf[0..len) to l, checking every
 * length: d_reclen is the name's record plus the tail, the padding is 0
 * and a record with an error has a zero statx. Returns 1 (with the
 * failure set) for a bad one.
 */
static int parse_plus(struct plus_listing *l, const char *buf, int len)
{
	static const struct statx zero;
	int pos = 0;

	while (pos < len) {
		const struct dirent64 *d = (const void *)(buf + pos);
		struct plus_record *rec;
		int name_end, resv;

		if (len - pos < (int)offsetof(struct dirent64, d_name) + 2 ||
		    l->n == MAX_ENTRIES)
			return fail("record at %d: %d bytes left", pos, len - pos);
		name_end = (offsetof(struct dirent64, d_name) +
			    strnlen(d->d_name, NAME_LEN) + 1 + 7) & ~7;
		if (d->d_reclen != name_end + PLUS_TAIL ||
		    pos + d->d_reclen > len)
			return fail("record %d (%s): d_reclen %d, expected %d",
				    l->n, d->d_name, d->d_reclen,
				    name_end + PLUS_TAIL);
		rec = &l->r[l->n++];
		rec->d.ino = d->d_ino;
		rec->d.off = d->d_off;
		rec->d.type = d->d_type;
		snprintf(rec->d.name, sizeof(rec->d.name), "%s", d->d_name);
		memcpy(&rec->error, buf + pos + name_end, 4);
		memcpy(&resv, buf + pos + name_end + 4, 4);
		memcpy(&rec->stx, buf + pos + name_end + 8, sizeof(rec->stx));
		if (resv)
			return fail("%s: reserved word %d", rec->d.name, resv);
		if (rec->error && memcmp(&rec->stx, &zero, sizeof(zero)))
			return fail("%s: error %d with a statx", rec->d.name,
				    rec->error);
		pos += d->d_reclen;
	}
	return 0;
}

/* Lists dfd by readdirplus reads of len bytes chained by d_off (or -1). */
static int list_plus(int dfd, unsigned int len, int by_pos,
		     struct plus_listing *got)
{
	static char buf[1 << 16];
	unsigned int flags = 0;
	int64_t off = 0;
	int res;

	got->n = 0;
	if (by_pos && lseek(dfd, 0, SEEK_SET) != 0)
		return fail("lseek: %s", strerror(errno));
	for (;;) {
		prep_getdents_plus(get_sqe(&ring), dfd, buf, len,
				   by_pos ? -1 : off);
		res = submit_one_flags(&ring, &flags);
		if (res <= 0)
			break;
		if (parse_plus(got, buf, res))
			return 1;
		off = got->r[got->n - 1].d.off;
	}
	if (res < 0)
		return fail("readdirplus from %lld into %u: %d", (long long)off,
			    len, res);
	if (!!(flags & IORING_CQE_F_DIR_EOF) != fs_reports_eof)
		return fail("readdirplus into %u: the last read %s the end flag",
			    len, fs_reports_eof ? "lacks" : "has");
	return 0;
}

/* The statx fields a second call cannot see change, compared. */
static int same_statx(const char *name, const struct statx *a,
		      const struct statx *b, int with_atime)
{
#define SAME(f)								\
	do {								\
		if (a->f != b->f)					\
			return fail("%s: " #f " %llu, statx(2) %llu",	\
				    name, (unsigned long long)a->f,	\
				    (unsigned long long)b->f);		\
	} while (0)
	SAME(stx_mask);
	SAME(stx_ino);
	SAME(stx_mode);
	SAME(stx_nlink);
	SAME(stx_uid);
	SAME(stx_gid);
	SAME(stx_size);
	SAME(stx_blocks);
	SAME(stx_blksize);
	SAME(stx_attributes);
	SAME(stx_dev_major);
	SAME(stx_dev_minor);
	SAME(stx_rdev_major);
	SAME(stx_rdev_minor);
	SAME(stx_mnt_id);
	SAME(stx_mtime.tv_sec);
	SAME(stx_mtime.tv_nsec);
	SAME(stx_ctime.tv_sec);
	SAME(stx_ctime.tv_nsec);
	SAME(stx_btime.tv_sec);
	SAME(stx_btime.tv_nsec);
	if (with_atime) {
		SAME(stx_atime.tv_sec);
		SAME(stx_atime.tv_nsec);
	}
	if (plus_mask & STATX_DIOALIGN) {
		SAME(stx_dio_mem_align);
		SAME(stx_dio_offset_align);
	}
#undef SAME
	return 0;
}

/* The records of got, names and d_off, against getdents64(2). */
static int plus_as_listed(int dfd, const struct plus_listing *got,
			  const char *what)
{
	static struct listing want, names;
	int i;

	if (reference(dfd, &want))
		return 1;
	names.n = got->n;
	for (i = 0; i < got->n; i++)
		names.r[i] = got->r[i].d;
	return compare(&names, &want, what);
}

/* Every record of got against getdents64(2) and statx(2) of its name. */
static int check_plus(int dfd, const struct plus_listing *got,
		      const char *what)
{
	int i;

	if (plus_as_listed(dfd, got, what))
		return 1;
	for (i = 0; i < got->n; i++) {
		const struct plus_record *rec = &got->r[i];
		struct statx stx;
		int dot = !strcmp(rec->d.name, ".");

		if (!strcmp(rec->d.name, "..")) {
			if (rec->error != -EOPNOTSUPP)
				return fail("%s: '..' carries %d", what,
					    rec->error);
			continue;
		}
		if (rec->error)
			return fail("%s: %s carries error %d", what,
				    rec->d.name, rec->error);
		if (statx(dfd, rec->d.name, AT_SYMLINK_NOFOLLOW, plus_mask,
			  &stx))
			return fail("statx %s: %s", rec->d.name,
				    strerror(errno));
		/* Reading the directory may move its atime, nothing else's. */
		if (same_statx(rec->d.name, &rec->stx, &stx, !dot))
			return 1;
		/* A mount on the name: statx(2) shows the mounted root. */
		if (rec->stx.stx_ino != rec->d.ino &&
		    !(rec->stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
			return fail("%s: d_ino %llu, stx_ino %llu", rec->d.name,
				    (unsigned long long)rec->d.ino,
				    (unsigned long long)rec->stx.stx_ino);
	}
	return 0;
}

/* Makes base/name as make_dir() and adds one entry of every other kind. */
static int make_plus_dir(const char *name, int n, int *fd_out)
{
	char longname[256];
	int dfd, fd;

	if (make_dir(name, n, &dfd))
		return 1;
	memset(longname, 'L', 255);
	longname[255] = '\0';
	fd = openat(dfd, longname, O_CREAT | O_WRONLY, 0644);
	if (fd < 0 || write(fd, "readdirplus\n", 12) != 12)
		return fail("create a 255-byte name: %s", strerror(errno));
	close(fd);
	if (linkat(dfd, longname, dfd, "hardlink", 0) ||
	    mkfifoat(dfd, "fifo", 0600) ||
	    mknodat(dfd, "null", S_IFCHR | 0666, makedev(1, 3)) ||
	    symlinkat("/nowhere/at/all", dfd, "dangling"))
		return fail("link/fifo/device/symlink in %s: %s", name,
			    strerror(errno));
	*fd_out = dfd;
	return rewind_dir(dfd);
}

/*
 * Inline (lookups in the dcache) and in io-wq (IOSQE_ASYNC: lookups that
 * may block), with a tmpfs mounted on "sub", which statx(2) follows.
 */
static int test_plus_matches_statx(void)
{
	static struct plus_listing got;
	unsigned int lens[] = { 560, 1200, 1 << 16 };
	char sub[PATH_MAX + 16];
	int dfd = -1, i, async, mounted;

	if (make_plus_dir("plus", 300, &dfd))
		return 1;
	snprintf(sub, sizeof(sub), "%s/plus/sub", base);
	mounted = !mount("plus-sub", sub, "tmpfs", 0, "mode=0751");
	if (!mounted)
		printf("  (no mount on an entry: %s)\n", strerror(errno));
	for (async = 0; async < 2; async++) {
		plus_sqe_flags = async ? IOSQE_ASYNC : 0;
		for (i = 0; i < 3; i++) {
			if (list_plus(dfd, lens[i], 0, &got) ||
			    check_plus(dfd, &got, "readdirplus chained by d_off"))
				goto out;
			if (list_plus(dfd, lens[i], 1, &got) ||
			    check_plus(dfd, &got, "readdirplus at off = -1"))
				goto out;
		}
	}
	plus_sqe_flags = 0;
	if (mounted && umount(sub))
		return fail("umount %s: %s", sub, strerror(errno));
	close(dfd);
	return 0;
out:
	plus_sqe_flags = 0;
	if (mounted)
		umount(sub);
	return 1;
}

/*
 * io-uring's kernel_plus drops the dentry cache while other suites run:
 * a test that needs its directory's names in the dcache takes turns with
 * it on CACHE_LOCK (DCACHE_LOCK there). Returns the locked descriptor (close
 * it to let go), or -1 with the failure set.
 */
static int dcache_turn(void)
{
	int lock = open(CACHE_LOCK, O_CREAT | O_RDWR | O_CLOEXEC, 0600);

	if (lock < 0 || flock(lock, LOCK_EX)) {
		fail("lock %s: %s", CACHE_LOCK, strerror(errno));
		if (lock >= 0)
			close(lock);
		return -1;
	}
	return lock;
}

/*
 * The record of name in got: no error, the root of what is mounted there,
 * as statx(dfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT) shows it.
 */
static int check_mounted_root(int dfd, const struct plus_listing *got,
			      const char *name, const char *what)
{
	struct statx stx;
	int i;

	for (i = 0; i < got->n && strcmp(got->r[i].d.name, name); i++)
		;
	if (i == got->n)
		return fail("%s: no record for %s", what, name);
	if (got->r[i].error)
		return fail("%s: %s, a mount point, carries %d", what, name,
			    got->r[i].error);
	if (!(got->r[i].stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return fail("%s: %s is not the mounted root", what, name);
	if (statx(dfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, PLUS_MASK,
		  &stx))
		return fail("statx %s: %s", name, strerror(errno));
	return same_statx(name, &got->r[i].stx, &stx, 1);
}

/*
 * IORING_GETDENTS_PLUS_DCACHE on a directory just made, so in the dcache:
 * every record as a full lookup gives it, inline and in io-wq, "sub" too,
 * with a tmpfs mounted on it: a lookup from the dcache follows the mount
 * as a path walk does (the test VM also drops the dentries of ext4 and
 * XFS: tests/kernel_plus.rs).
 */
/*
 * Readdirplus from the dcache only where ->getattr() may wait (a
 * filesystem the series does not cover): the names are getdents64(2)'s,
 * and every record but ".." carries -EAGAIN.
 */
static int check_plus_refused(int dfd, const struct plus_listing *got)
{
	int i;

	if (plus_as_listed(dfd, got, "from the dcache"))
		return 1;
	for (i = 0; i < got->n; i++) {
		int expected = strcmp(got->r[i].d.name, "..") ? -EAGAIN :
			       -EOPNOTSUPP;

		if (got->r[i].error != expected)
			return fail("from the dcache: %s carries %d, not %d",
				    got->r[i].d.name, got->r[i].error,
				    expected);
	}
	return 0;
}

static int test_plus_dcache(void)
{
	static struct plus_listing got;
	char sub[PATH_MAX + 16];
	int dfd = -1, async, mounted, ret = 1, lock;

	lock = dcache_turn();
	if (lock < 0)
		return 1;
	if (make_plus_dir("plus-dcache", 100, &dfd)) {
		close(lock);
		return 1;
	}
	if (!fs_in_series) {
		plus_dcache = IORING_GETDENTS_PLUS_DCACHE;
		for (async = 0; async < 2; async++) {
			plus_sqe_flags = async ? IOSQE_ASYNC : 0;
			if (list_plus(dfd, 1200, 0, &got) ||
			    check_plus_refused(dfd, &got))
				break;
		}
		plus_sqe_flags = 0;
		plus_dcache = 0;
		close(dfd);
		close(lock);
		return async < 2;
	}
	snprintf(sub, sizeof(sub), "%s/plus-dcache/sub", base);
	mounted = !mount("plus-dcache-sub", sub, "tmpfs", 0, "mode=0751");
	if (!mounted) {
		fail("mount on %s: %s", sub, strerror(errno));
		goto out;
	}
	plus_dcache = IORING_GETDENTS_PLUS_DCACHE;
	for (async = 0; async < 2; async++) {
		plus_sqe_flags = async ? IOSQE_ASYNC : 0;
		if (list_plus(dfd, 1200, 0, &got) ||
		    check_plus(dfd, &got, "from the dcache") ||
		    check_mounted_root(dfd, &got, "sub", "from the dcache"))
			goto out;
	}
	ret = 0;
out:
	plus_sqe_flags = 0;
	plus_dcache = 0;
	if (mounted && umount(sub) && !ret)
		ret = fail("umount %s: %s", sub, strerror(errno));
	close(dfd);
	close(lock);
	return ret;
}

/*
 * A directory opened, then covered by a mount: its "." record is the
 * directory the descriptor names, as statx(fd, ".") gives it, not the root
 * of the mount on top ("." is not followed into a mount by a path walk),
 * inline and in io-wq, with and without IORING_GETDENTS_PLUS_DCACHE.
 */
static int test_plus_dot_overmounted(void)
{
	static struct plus_listing got;
	char dir[PATH_MAX + 16];
	int dfd = -1, mode, ret = 1, lock;

	lock = dcache_turn();
	if (lock < 0)
		return 1;
	if (make_plus_dir("plus-over", 40, &dfd)) {
		close(lock);
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/plus-over", base);
	if (mount("plus-over", dir, "tmpfs", 0, "mode=0751")) {
		fail("mount on %s: %s", dir, strerror(errno));
		close(dfd);
		close(lock);
		return 1;
	}
	for (mode = 0; mode < 4; mode++) {
		plus_sqe_flags = mode & 1 ? IOSQE_ASYNC : 0;
		plus_dcache = mode & 2 ? IORING_GETDENTS_PLUS_DCACHE : 0;
		if (list_plus(dfd, 1200, 0, &got))
			goto out;
		if (plus_dcache && !fs_in_series ? check_plus_refused(dfd, &got) :
		    check_plus(dfd, &got, "overmounted directory"))
			goto out;
	}
	ret = 0;
out:
	plus_sqe_flags = 0;
	plus_dcache = 0;
	if (umount(dir) && !ret)
		ret = fail("umount %s: %s", dir, strerror(errno));
	close(dfd);
	close(lock);
	return ret;
}

/*
 * A directory the caller may read but not search: getdents64(2) lists it,
 * statx(2) of any name fails with EACCES, and so does every record. Run
 * in a child as nobody (root passes DAC checks), on a descriptor opened
 * before.
 */
/*
 * A user namespace whose ids 0-1999 are 10000-11999 outside: its
 * descriptor (for MOUNT_ATTR_IDMAP), or -1 with the failure set. A child
 * makes it and is gone by the return; the descriptor keeps it.
 */
static int idmap_userns(void)
{
	static const char *const maps[] = { "uid_map", "gid_map" };
	char path[64], ready;
	int pipefd[2], i, fd, ns = -1, status;
	pid_t pid;

	if (pipe(pipefd))
		return fail("pipe: %s", strerror(errno)), -1;
	pid = fork();
	if (pid == 0) {
		close(pipefd[0]);
		if (unshare(CLONE_NEWUSER) || write(pipefd[1], "u", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	if (pid < 0 || read(pipefd[0], &ready, 1) != 1) {
		fail("a child in a new user namespace: %s", strerror(errno));
		goto out;
	}
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/proc/%d/%s", pid, maps[i]);
		fd = open(path, O_WRONLY);
		if (fd < 0 || write(fd, "0 10000 2000\n", 13) != 13) {
			fail("write %s: %s", path, strerror(errno));
			if (fd >= 0)
				close(fd);
			goto out;
		}
		close(fd);
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	if (ns < 0)
		fail("open %s: %s", path, strerror(errno));
out:
	close(pipefd[0]);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	return ns;
}

/*
 * Through an idmapped mount (a detached clone of the directory given the
 * mapping of idmap_userns()), every record carries the owners statx(2)
 * gives there, inline and in io-wq: 10000 for root's files, 11000 for a
 * file of uid and gid 1000, the overflow ids (65534) for 5000, which the
 * mapping leaves out. overlayfs cannot be idmapped.
 */
static int test_plus_idmapped(void)
{
	static const struct {
		const char *name;
		unsigned int owner, want;
	} owners[] = {
		{ "owned-by-0", 0, 10000 },
		{ "owned-by-1000", 1000, 11000 },
		{ "owned-by-5000", 5000, 65534 },
	};
	static struct plus_listing got;
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP };
	char path[PATH_MAX + 16];
	int dfd, tree = -1, fd = -1, ns, lock, async, i, j, ret = 1;

	if (make_plus_dir("plus-idmap", 20, &dfd))
		return 1;
	for (i = 0; i < 3; i++) {
		int fd = openat(dfd, owners[i].name, O_CREAT | O_WRONLY, 0644);

		if (fd < 0 || fchown(fd, owners[i].owner, owners[i].owner))
			return fail("create %s owned by %u: %s", owners[i].name,
				    owners[i].owner, strerror(errno));
		close(fd);
	}
	close(dfd);
	ns = idmap_userns();
	if (ns < 0)
		return 1;
	/* A mount, detached or not, sends the dcache lookups beside to io-wq. */
	lock = dcache_turn();
	if (lock < 0)
		goto out;
	snprintf(path, sizeof(path), "%s/plus-idmap", base);
	tree = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0) {
		fail("open_tree %s: %s", path, strerror(errno));
		goto out;
	}
	attr.userns_fd = ns;
	if (mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof(attr))) {
		struct statfs sfs;

		if (errno == EINVAL && !fstatfs(tree, &sfs) &&
		    sfs.f_type == OVERLAYFS_SUPER_MAGIC) {
			printf("  (overlayfs: no idmapped mounts)\n");
			ret = 0;
		} else {
			fail("idmap %s: %s", path, strerror(errno));
		}
		goto out;
	}
	fd = openat(tree, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fail("open the idmapped %s: %s", path, strerror(errno));
		goto out;
	}
	for (async = 0; async < 2; async++) {
		const char *what = async ? "idmapped, in io-wq" : "idmapped";

		plus_sqe_flags = async ? IOSQE_ASYNC : 0;
		if (list_plus(fd, 1 << 16, 0, &got) ||
		    check_plus(fd, &got, what))
			goto out;
		for (i = 0; i < 3; i++) {
			for (j = 0; j < got.n; j++)
				if (!strcmp(got.r[j].d.name, owners[i].name))
					break;
			if (j == got.n) {
				fail("%s: %s not listed", what, owners[i].name);
				goto out;
			}
			if (got.r[j].stx.stx_uid != owners[i].want ||
			    got.r[j].stx.stx_gid != owners[i].want) {
				fail("%s: %s owned by %u:%u on disk carries %u:%u, expected %u:%u",
				     what, owners[i].name, owners[i].owner,
				     owners[i].owner, got.r[j].stx.stx_uid,
				     got.r[j].stx.stx_gid, owners[i].want,
				     owners[i].want);
				goto out;
			}
		}
	}
	ret = 0;
out:
	plus_sqe_flags = 0;
	if (fd >= 0)
		close(fd);
	if (tree >= 0)
		close(tree);
	if (lock >= 0)
		close(lock);
	close(ns);
	return ret;
}

/*
 * dfd read by getdents64 into want, in a new clock tick, and every name
 * in it looked up, so that readdirplus finds its blocks cached, no atime
 * update due (as test_inline_completion) and each name in the dcache.
 */
static int warm_names(int dfd, struct listing *want)
{
	struct timespec tick = { 0, 50 * 1000 * 1000 };
	struct stat st;
	int i;

	if (commit_entries(dfd))
		return 1;
	nanosleep(&tick, NULL);
	if (reference(dfd, want))
		return 1;
	for (i = 0; i < want->n; i++) {
		if (strcmp(want->r[i].name, "..") &&
		    fstatat(dfd, want->r[i].name, &st, AT_SYMLINK_NOFOLLOW))
			return fail("stat %s: %s", want->r[i].name,
				    strerror(errno));
	}
	return 0;
}

/* A master key for fscrypt, in the shape FS_IOC_ADD_ENCRYPTION_KEY takes. */
struct enc_key {
	struct fscrypt_add_key_arg arg;
	__u8 raw[FSCRYPT_MAX_KEY_SIZE];
};

/*
 * The encrypted file moved out to base/plus-enc-out, looked up from the
 * dcache by a new ring: the read completes inline (no io-wq worker), the
 * records are statx(2)'s with STATX_DIOALIGN, and "moved" carries the
 * block size an encrypted file's direct I/O needs where the plain file
 * beside it carries the device's, so the attribute was read, not guessed.
 */
static int enc_inline_child(int dfd, const struct listing *want)
{
	static struct plus_listing got;
	int i, moved = -1, plain = -1, workers;

	(void)want;
	if (ring_init(&ring, 8, 0))
		return fail("io_uring_setup in the child");
	plus_dcache = IORING_GETDENTS_PLUS_DCACHE;
	/* At -1 from lseek(2): a read at another position seeks, in io-wq. */
	if (list_plus(dfd, 1 << 16, 1, &got) ||
	    check_plus(dfd, &got, "encrypted file, from the dcache"))
		return 1;
	workers = count_iowq_workers();
	if (workers != 0)
		return fail("%d io-wq workers after a dcache-only readdirplus of a cached directory",
			    workers);
	for (i = 0; i < got.n; i++) {
		if (!strcmp(got.r[i].d.name, "moved"))
			moved = i;
		else if (!strcmp(got.r[i].d.name, "plain"))
			plain = i;
	}
	if (moved < 0 || plain < 0)
		return fail("moved or plain not listed");
	if (!(got.r[moved].stx.stx_mask & STATX_DIOALIGN) ||
	    got.r[moved].stx.stx_dio_offset_align !=
		    got.r[moved].stx.stx_blksize ||
	    got.r[plain].stx.stx_dio_offset_align ==
		    got.r[plain].stx.stx_blksize)
		return fail("direct I/O alignment %u (encrypted), %u (plain), block size %u",
			    got.r[moved].stx.stx_dio_offset_align,
			    got.r[plain].stx.stx_dio_offset_align,
			    got.r[moved].stx.stx_blksize);
	return 0;
}

/* base/name read with readdirplus, inline and in io-wq, against statx(2). */
static int check_plus_dir(const char *name, const char *what)
{
	static struct plus_listing got;
	int dfd, async, ret = 0;

	dfd = openat(base_fd, name, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return fail("open %s: %s", name, strerror(errno));
	for (async = 0; async < 2 && !ret; async++) {
		plus_sqe_flags = async ? IOSQE_ASYNC : 0;
		ret = list_plus(dfd, 1200, 0, &got) ||
		      check_plus(dfd, &got, what);
	}
	plus_sqe_flags = 0;
	close(dfd);
	return ret;
}

/*
 * Sets up base/plus-enc, encrypted with a v2 policy under key (added to
 * the filesystem), with files, a directory and a symlink, and base/plus-
 * enc-out, a plain directory holding "plain" and "moved", a file written
 * in plus-enc and renamed out, so still encrypted. 1 with the failure set,
 * -1 (and a note) where the filesystem has no fscrypt.
 */
static int make_enc_dirs(struct enc_key *key)
{
	struct fscrypt_policy_v2 policy = {
		.version = FSCRYPT_POLICY_V2,
		.contents_encryption_mode = FSCRYPT_MODE_AES_256_XTS,
		.filenames_encryption_mode = FSCRYPT_MODE_AES_256_CTS,
		.flags = FSCRYPT_POLICY_FLAGS_PAD_32,
	};
	struct statfs sfs;
	int enc, out, fd, i;

	memset(key, 0, sizeof(*key));
	key->arg.key_spec.type = FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER;
	key->arg.raw_size = FSCRYPT_MAX_KEY_SIZE;
	for (i = 0; i < FSCRYPT_MAX_KEY_SIZE; i++)
		key->raw[i] = (__u8)(i * 7 + 1);
	if (ioctl(base_fd, FS_IOC_ADD_ENCRYPTION_KEY, &key->arg)) {
		/* test-vm makes the ext4 disk with the encrypt feature. */
		if ((errno == ENOTTY || errno == EOPNOTSUPP) &&
		    !fstatfs(base_fd, &sfs) && sfs.f_type != EXT4_SUPER_MAGIC) {
			printf("  (no fscrypt on this filesystem)\n");
			return -1;
		}
		return fail("add an encryption key: %s", strerror(errno));
	}
	memcpy(policy.master_key_identifier, key->arg.key_spec.u.identifier,
	       FSCRYPT_KEY_IDENTIFIER_SIZE);
	if (mkdirat(base_fd, "plus-enc", 0755) ||
	    mkdirat(base_fd, "plus-enc-out", 0755))
		return fail("mkdir plus-enc: %s", strerror(errno));
	enc = openat(base_fd, "plus-enc", O_RDONLY | O_DIRECTORY);
	out = openat(base_fd, "plus-enc-out", O_RDONLY | O_DIRECTORY);
	if (enc < 0 || out < 0 ||
	    ioctl(enc, FS_IOC_SET_ENCRYPTION_POLICY, &policy))
		return fail("encrypt plus-enc: %s", strerror(errno));
	for (i = 0; i < 40; i++) {
		char name[NAME_LEN];

		snprintf(name, sizeof(name), "f%02d-%.*s", i, i,
			 "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee");
		fd = openat(enc, name, O_CREAT | O_WRONLY, 0644);
		if (fd < 0 || write(fd, name, i) != i)
			return fail("create %s: %s", name, strerror(errno));
		close(fd);
	}
	fd = openat(enc, "moved", O_CREAT | O_WRONLY, 0644);
	if (fd < 0 || write(fd, "encrypted\n", 10) != 10)
		return fail("create moved: %s", strerror(errno));
	close(fd);
	fd = openat(out, "plain", O_CREAT | O_WRONLY, 0644);
	if (fd < 0 || write(fd, "plain\n", 6) != 6)
		return fail("create plain: %s", strerror(errno));
	close(fd);
	if (mkdirat(enc, "sub", 0755) ||
	    symlinkat("a target long enough to need a block", enc, "link") ||
	    renameat(enc, "moved", out, "moved"))
		return fail("sub, link or the rename of moved: %s",
			    strerror(errno));
	close(enc);
	close(out);
	return 0;
}

/*
 * fscrypt: an encrypted directory read with its key (the decrypted names)
 * and after the key is removed (the no-key names getdents64 gives), every
 * record statx(2)'s with STATX_DIOALIGN; and an encrypted file moved out
 * to a plain directory, read inline from the dcache (enc_inline_child()):
 * its direct I/O alignment is an attribute of the inode, which on 7.3
 * needs no key, so a dcache-only lookup sets none up.
 */
static int test_plus_encrypted(void)
{
	static struct listing want;
	struct fscrypt_remove_key_arg remove = { 0 };
	struct enc_key key;
	int ret, dfd, lock, failed;

	ret = make_enc_dirs(&key);
	if (ret)
		return ret < 0 ? 0 : 1;
	plus_mask = PLUS_MASK | STATX_DIOALIGN;
	ret = 1;
	if (check_plus_dir("plus-enc", "encrypted, with the key") ||
	    check_plus_dir("plus-enc-out", "encrypted file, plain directory"))
		goto out;
	lock = dcache_turn();
	if (lock < 0)
		goto out;
	dfd = openat(base_fd, "plus-enc-out", O_RDONLY | O_DIRECTORY);
	if (dfd < 0) {
		fail("open plus-enc-out: %s", strerror(errno));
		close(lock);
		goto out;
	}
	failed = warm_names(dfd, &want) ||
		 in_child(enc_inline_child, dfd, &want);
	close(dfd);
	close(lock);
	if (failed)
		goto out;
	remove.key_spec = key.arg.key_spec;
	if (ioctl(base_fd, FS_IOC_REMOVE_ENCRYPTION_KEY, &remove)) {
		fail("remove the encryption key: %s", strerror(errno));
		goto out;
	}
	if (remove.removal_status_flags) {
		fail("remove the encryption key: status 0x%x (files still open)",
		     remove.removal_status_flags);
		goto out;
	}
	/* Without the key getdents64 gives no-key names: none is "sub". */
	dfd = openat(base_fd, "plus-enc", O_RDONLY | O_DIRECTORY);
	if (dfd < 0) {
		fail("open plus-enc: %s", strerror(errno));
		goto out;
	}
	failed = reference(dfd, &want);
	close(dfd);
	if (failed)
		goto out;
	if (want.n != 44 || count_name(&want, "sub")) {
		fail("without the key: %d names, \"sub\" %d times", want.n,
		     count_name(&want, "sub"));
		goto out;
	}
	if (check_plus_dir("plus-enc", "encrypted, without the key") ||
	    check_plus_dir("plus-enc-out", "encrypted file without its key"))
		goto out;
	ret = 0;
out:
	plus_mask = PLUS_MASK;
	return ret;
}

static int plus_no_search_child(int dfd, const struct listing *want)
{
	static struct plus_listing got;
	struct statx stx;
	int i;

	if (setgid(65534) || setuid(65534))
		return fail("setuid nobody: %s", strerror(errno));
	if (statx(dfd, want->r[want->n - 1].name, AT_SYMLINK_NOFOLLOW,
		  PLUS_MASK, &stx) == 0 || errno != EACCES)
		return fail("statx(2) without search permission: %s",
			    strerror(errno));
	if (ring_init(&ring, 8, 0))
		return fail("io_uring_setup in the child");
	for (i = 0; i < 2; i++) {
		plus_sqe_flags = i ? IOSQE_ASYNC : 0;
		if (list_plus(dfd, 1200, 0, &got))
			return 1;
		if (got.n != want->n)
			return fail("%d records, getdents64 %d", got.n, want->n);
		for (int j = 0; j < got.n; j++) {
			if (strcmp(got.r[j].d.name, want->r[j].name) ||
			    got.r[j].error != -EACCES)
				return fail("record %d: %s with %d, expected %s with -EACCES",
					    j, got.r[j].d.name, got.r[j].error,
					    want->r[j].name);
		}
	}
	return 0;
}

static int test_plus_no_search_permission(void)
{
	static struct listing want;
	char path[PATH_MAX + 16];
	int dfd;

	if (make_dir("plus-nosearch", 20, &dfd) || reference(dfd, &want))
		return 1;
	snprintf(path, sizeof(path), "%s/plus-nosearch", base);
	if (chmod(path, 0744))
		return fail("chmod: %s", strerror(errno));
	if (in_child(plus_no_search_child, dfd, &want))
		return 1;
	close(dfd);
	return 0;
}

/*
 * Entries removed or renamed between two chained reads: the records read
 * after are the directory as it is then, each with the attributes statx(2)
 * gives now.
 */
static int test_plus_changed_between_reads(void)
{
	static struct plus_listing got, rest;
	static char buf[2048];
	int dfd, res, i, removed = 0;
	char to[32];

	if (make_dir("plus-changed", 200, &dfd))
		return 1;
	got.n = 0;
	prep_getdents_plus(get_sqe(&ring), dfd, buf, sizeof(buf), 0);
	res = submit_one(&ring);
	if (res <= 0 || parse_plus(&got, buf, res))
		return fail("first readdirplus: %d %s", res, failure);
	/* Remove every file whose number is odd, rename those ending in 0. */
	{
		DIR *d = fdopendir(dup(dfd));
		struct dirent *e;

		if (!d)
			return fail("fdopendir: %s", strerror(errno));
		rewinddir(d);
		while ((e = readdir(d))) {
			int num = atoi(e->d_name);

			if (e->d_name[0] < '0' || e->d_name[0] > '9')
				continue;
			if (num % 2) {
				if (unlinkat(dfd, e->d_name, 0))
					return fail("unlink: %s", strerror(errno));
				removed++;
			} else if (num % 10 == 0) {
				snprintf(to, sizeof(to), "renamed-%d", num);
				if (renameat(dfd, e->d_name, dfd, to))
					return fail("rename: %s", strerror(errno));
			}
		}
		closedir(d);
	}
	rest.n = 0;
	for (;;) {
		int64_t off = rest.n ? rest.r[rest.n - 1].d.off :
				       got.r[got.n - 1].d.off;

		prep_getdents_plus(get_sqe(&ring), dfd, buf, sizeof(buf), off);
		res = submit_one(&ring);
		if (res <= 0)
			break;
		if (parse_plus(&rest, buf, res))
			return 1;
	}
	if (res < 0)
		return fail("readdirplus after the changes: %d", res);
	for (i = 0; i < rest.n; i++) {
		const struct plus_record *rec = &rest.r[i];
		struct statx stx;

		if (!strcmp(rec->d.name, ".."))
			continue;
		if (statx(dfd, rec->d.name, AT_SYMLINK_NOFOLLOW, PLUS_MASK,
			  &stx))
			return fail("%s listed after it was removed (%d)",
				    rec->d.name, rec->error);
		if (rec->error)
			return fail("%s: error %d", rec->d.name, rec->error);
		if (same_statx(rec->d.name, &rec->stx, &stx,
			       strcmp(rec->d.name, ".")))
			return 1;
	}
	if (removed != 100)
		return fail("removed %d files, expected 100", removed);
	close(dfd);
	return 0;
}


static int test_plus_small_buffer_and_flags(void)
{
	static struct listing want;
	static char buf[4096];
	struct io_uring_sqe *sqe;
	int dfd, res, first;

	if (make_dir("plus-small", 3, &dfd) || reference(dfd, &want))
		return 1;
	/*
	 * The first record in the directory's order (hash order on ext4)
	 * with its attributes: one byte less holds no record.
	 */
	first = reclen(&want.r[0]) + PLUS_TAIL;
	prep_getdents_plus(get_sqe(&ring), dfd, buf, first - 1, 0);
	res = submit_one(&ring);
	if (res != -EINVAL)
		return fail("a buffer one byte short of a record: %d", res);
	prep_getdents_plus(get_sqe(&ring), dfd, buf, first, 0);
	res = submit_one(&ring);
	if (res != first)
		return fail("a buffer of one record (%s): %d, expected %d",
			    want.r[0].name, res, first);
	/*
	 * An unknown flag, IORING_GETDENTS_PLUS_DCACHE without
	 * IORING_GETDENTS_PLUS and a reserved statx bit are refused.
	 */
	sqe = get_sqe(&ring);
	prep_getdents_plus(sqe, dfd, buf, sizeof(buf), 0);
	sqe->rw_flags = IORING_GETDENTS_PLUS | 4;
	if ((res = submit_one(&ring)) != -EINVAL)
		return fail("getdents flag 4: %d", res);
	sqe = get_sqe(&ring);
	prep_getdents_plus(sqe, dfd, buf, sizeof(buf), 0);
	sqe->rw_flags = IORING_GETDENTS_PLUS_DCACHE;
	if ((res = submit_one(&ring)) != -EINVAL)
		return fail("IORING_GETDENTS_PLUS_DCACHE alone: %d", res);
	sqe = get_sqe(&ring);
	prep_getdents_plus(sqe, dfd, buf, sizeof(buf), 0);
	sqe->file_index = 0x80000000U;
	if ((res = submit_one(&ring)) != -EINVAL)
		return fail("STATX__RESERVED in the mask: %d", res);
	close(dfd);
	return 0;
}

/*
 * With IORING_GETDENTS_PLUS, rw_flags holds its flags and file_index its
 * statx mask; every other field the plain read leaves unused is still
 * refused: ioprio, buf_index, addr3 and __pad2[0].
 */
static int test_plus_reserved_bytes_einval(void)
{
	static const struct { int start, end; } ranges[] = {
		{ 2, 4 }, { 40, 42 }, { 48, 64 },
	};
	static char buf[4096];
	int dfd, i, b, res, checked = 0;

	if (make_dir("plus-reserved", 3, &dfd))
		return 1;
	prep_getdents_plus(get_sqe(&ring), dfd, buf, sizeof(buf), 0);
	res = submit_one(&ring);
	if (res <= 0)
		return fail("readdirplus with reserved fields zero: %d", res);
	for (i = 0; i < 3; i++) {
		for (b = ranges[i].start; b < ranges[i].end; b++) {
			struct io_uring_sqe *sqe = get_sqe(&ring);

			prep_getdents_plus(sqe, dfd, buf, sizeof(buf), 0);
			((unsigned char *)sqe)[b] = 0x80;
			res = submit_one(&ring);
			if (res != -EINVAL)
				return fail("SQE byte %d set with PLUS: %d, expected -EINVAL",
					    b, res);
			checked++;
		}
	}
	if (checked != 2 + 2 + 16)
		return fail("checked %d bytes", checked);
	close(dfd);
	return 0;
}

/*
 * Readers against a process that creates and removes names in the same
 * directory, for a bounded time: every record carries either attributes
 * of a regular file (a name re-created in between may have another inode)
 * or -ENOENT (removed between the read and its lookup), and the chain by
 * d_off always reaches the end.
 */
static int test_plus_racing_unlinks(void)
{
	static struct plus_listing got;
	struct timespec start, now;
	int dfd, lists = 0, gone = 0, i;
	pid_t pid;

	if (make_dir("plus-race", 50, &dfd))
		return 1;
	pid = fork();
	if (pid < 0)
		return fail("fork: %s", strerror(errno));
	if (pid == 0) {
		for (unsigned int n = 0;; n++) {
			char name[32];
			int fd;

			snprintf(name, sizeof(name), "race-%u", n % 64);
			fd = openat(dfd, name, O_CREAT | O_WRONLY, 0600);
			if (fd >= 0)
				close(fd);
			snprintf(name, sizeof(name), "race-%u", (n + 32) % 64);
			unlinkat(dfd, name, 0);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		if (list_plus(dfd, 2048, lists % 2, &got))
			break;
		for (i = 0; i < got.n; i++) {
			const struct plus_record *rec = &got.r[i];

			if (rec->error == -ENOENT) {
				gone++;
				continue;
			}
			if (!strcmp(rec->d.name, ".."))
				continue;
			if (rec->error || (strncmp(rec->d.name, "race-", 5) == 0 &&
					   !S_ISREG(rec->stx.stx_mode))) {
				fail("%s: error %d, mode 0%o", rec->d.name,
				     rec->error, rec->stx.stx_mode);
				break;
			}
		}
		if (i < got.n)
			break;
		lists++;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < 2);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (failure[0])
		return 1;
	printf("  (%d listings, %d records of names gone before their lookup)\n",
	       lists, gone);
	close(dfd);
	return 0;
}

/*
 * In a child with a ring of its own, so no io-wq worker exists yet:
 * readdirplus of a directory whose names are in the dcache completes
 * inline on tmpfs, ext4 and XFS (no worker is created); one with
 * IOSQE_ASYNC creates one, so the count sees punted requests.
 */
static int plus_inline_child(int dfd, const struct listing *want)
{
	static struct plus_listing got;
	int i, workers;

	if (ring_init(&ring, 8, 0))
		return fail("io_uring_setup in the child");
	/*
	 * At off = -1 from a position set with lseek(2): a read at an offset
	 * the file is not at needs a seek, which goes to io-wq.
	 */
	for (i = 0; i < 4; i++) {
		if (list_plus(dfd, 1 << 16, 1, &got))
			return 1;
		if (got.n != want->n)
			return fail("%d records, getdents64 %d", got.n, want->n);
	}
	workers = count_iowq_workers();
	if (!fs_in_series)
		return workers ? 0 : fail("readdirplus inline on a filesystem without non-blocking reads");
	if (workers != 0)
		return fail("%d io-wq workers after readdirplus of a cached directory",
			    workers);
	plus_sqe_flags = IOSQE_ASYNC;
	if (list_plus(dfd, 1 << 16, 0, &got))
		return 1;
	if (count_iowq_workers() == 0)
		return fail("no io-wq worker after readdirplus with IOSQE_ASYNC");
	return 0;
}

static int test_plus_inline_completion(void)
{
	static struct listing want;
	int dfd, lock, ret = 1;

	lock = dcache_turn();
	if (lock < 0)
		return 1;
	if (make_dir("plus-inline", 50, &dfd) || warm_names(dfd, &want) ||
	    in_child(plus_inline_child, dfd, &want))
		goto out;
	close(dfd);
	ret = 0;
out:
	close(lock);
	return ret;
}

int main(void)
{
	static const struct c_test tests[] = {
		{ "chained_by_d_off", test_chained_by_d_off },
		{ "dir_eof", test_dir_eof },
		{ "offset_minus_one", test_offset_minus_one },
		{ "linked_reads", test_linked_reads },
		{ "reserved_bytes_einval", test_reserved_bytes_einval },
		{ "bad_offsets", test_bad_offsets },
		{ "enotdir", test_enotdir },
		{ "efault", test_efault },
		{ "changed_between_reads", test_changed_between_reads },
		{ "inline_completion", test_inline_completion },
		{ "access_events_once_per_read", test_access_events_once_per_read },
		{ "end_read_as_getdents64", test_end_read_as_getdents64 },
		{ "d_off_width", test_d_off_width },
#if defined(__x86_64__)
		{ "ring_width_in_iowq", test_ring_width_in_iowq },
#endif
		{ "plus_matches_statx", test_plus_matches_statx },
		{ "plus_dcache", test_plus_dcache },
		{ "plus_dot_overmounted", test_plus_dot_overmounted },
		{ "plus_idmapped", test_plus_idmapped },
		{ "plus_encrypted", test_plus_encrypted },
		{ "plus_small_buffer_and_flags", test_plus_small_buffer_and_flags },
		{ "plus_reserved_bytes_einval", test_plus_reserved_bytes_einval },
		{ "plus_no_search_permission", test_plus_no_search_permission },
		{ "plus_changed_between_reads", test_plus_changed_between_reads },
		{ "plus_racing_unlinks", test_plus_racing_unlinks },
		{ "plus_inline_completion", test_plus_inline_completion },
	};
	const char *tmp = getenv("TMPDIR");
	int n = sizeof(tests) / sizeof(tests[0]);
	int i, passed = 0, failed = 0, ret;
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = ring_init(&ring, 64, 0);
	if (ret) {
		fprintf(stderr, "io_uring_setup: %s\n", strerror(-ret));
		return 1;
	}
	if (!getdents_available(&ring))
		return getdents_missing(OP_GETDENTS) ? 1 : 0;
	snprintf(base, sizeof(base), "%s/getdents-test.XXXXXX",
		 tmp ? tmp : "/tmp");
	if (!mkdtemp(base)) {
		fprintf(stderr, "mkdtemp %s: %s\n", base, strerror(errno));
		return 1;
	}
	base_fd = open(base, O_RDONLY | O_DIRECTORY);
	short_ok = short_reads_possible(base_fd);
	fs_type = fs_magic(base_fd);
	fs_in_series = series_covers(fs_type, &fs_reports_eof);

	printf("running %d tests in %s\n", n, base);
	for (i = 0; i < n; i++) {
		failure[0] = '\0';
		report_test(tests[i].name, tests[i].fn(), failure, &passed,
			    &failed);
	}
	if (base_fd >= 0) {
		remove_tree(base_fd);
		rmdir(base);
	}
	report_result(passed, failed, &t0);
	return failed ? 1 : 0;
}
