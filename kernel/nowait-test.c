// SPDX-License-Identifier: MIT
/*
 * Description: non-blocking directory reads (kernel/patches 0007-0009,
 * 0015). A GETDENTS of a directory whose blocks are cached completes in the
 * task that submitted it; one of a cold directory goes to an io-wq worker;
 * both return exactly what getdents64(2) returns. Where the inline attempt could
 * wait it does not try: a read that finds an atime update due (decided
 * once, before the read: a read that completed inline never moved atime on
 * a disk filesystem, under strictatime too), and one that may raise a
 * fanotify permission event (kernel/patches 0004: the submission returns
 * before the listener answers; one event per read). kernel/test-vm runs it
 * with $TMPDIR on tmpfs, ext4, ext4 without dir_index (linear directories),
 * XFS and btrfs. Raw system calls only, like getdents-test.c.
 *
 * How a request is known to have completed inline: the ring is made with
 * IORING_SETUP_DEFER_TASKRUN. There, a request that an io-wq worker
 * completes reaches the CQ ring only through task work of the submitting
 * task, which runs only when that task waits (io_uring_enter with
 * IORING_ENTER_GETEVENTS). So after an io_uring_enter that submits one
 * request and does not wait, its completion is in the CQ ring if and only
 * if it completed during the submission, in the submitting task.
 * test_async_is_seen_as_punted checks the signal both ways.
 *
 * With --walk DIR it lists every directory under DIR that way (32 KiB
 * reads at -1, subdirectories found by d_type) and prints how many reads
 * completed inline; --time runs a program and prints its time and context
 * switches: the measurements of kernel/nowait-bench.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/fanotify.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include "c-test.h"

#define MAX_ENTRIES	4096
#define NAME_LEN	256

struct record {
	uint64_t ino;
	int64_t off;
	unsigned char type;
	int ends_read;	/* the last record of a GETDENTS */
	char name[NAME_LEN];
};

struct listing {
	int n;
	struct record r[MAX_ENTRIES];
};

/* GETDENTS counted by where they completed. */
struct counts {
	long inline_reads, punted_reads;
};

static struct ring ring;
static struct listing want, got;
static char failure[512];
static char base[PATH_MAX];
static int base_fd = -1;
static long fs_type;

static int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(failure, sizeof(failure), fmt, ap);
	va_end(ap);
	return 1;
}

/*
 * One GETDENTS: submitted without waiting, then waited for if its
 * completion is not there yet. *inl says which (see the top of the file).
 * Returns the result, or INT32_MIN with the failure recorded.
 */
static int getdents_req(int fd, void *buf, unsigned int len, int64_t off,
			unsigned char sqe_flags, int *inl)
{
	struct io_uring_cqe cqe;
	int ret;

	getdents_sqe(&ring, fd, buf, len, off)->flags = sqe_flags;
	ret = ring_enter(&ring, 1, 0, 0);
	if (ret != 1) {
		fail("io_uring_enter submitted %d", ret);
		return INT32_MIN;
	}
	*inl = peek_cqe(&ring, &cqe);
	while (!*inl && !peek_cqe(&ring, &cqe)) {
		ret = ring_enter(&ring, 0, 1, IORING_ENTER_GETEVENTS);
		if (ret < 0 && ret != -EINTR) {
			fail("io_uring_enter waiting: %d", ret);
			return INT32_MIN;
		}
	}
	return cqe.res;
}

static int parse(struct listing *l, const char *buf, int len)
{
	int pos = 0;

	while (pos < len) {
		const struct dirent64 *d = (const void *)(buf + pos);
		struct record *rec;

		if (d->d_reclen < offsetof(struct dirent64, d_name) + 2 ||
		    pos + d->d_reclen > len || l->n == MAX_ENTRIES)
			return fail("bad record at byte %d of %d", pos, len);
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

/* The whole directory by getdents64(2), which also brings it into cache. */
static int reference(int fd, struct listing *l)
{
	static char buf[1 << 15];
	int n;

	l->n = 0;
	if (lseek(fd, 0, SEEK_SET) != 0)
		return fail("lseek: %s", strerror(errno));
	while ((n = syscall(__NR_getdents64, fd, buf, sizeof(buf))) > 0) {
		if (parse(l, buf, n))
			return 1;
	}
	return n < 0 ? fail("getdents64: %s", strerror(errno)) : 0;
}

/*
 * The whole directory by GETDENTS of len bytes from position 0, chained at
 * -1 or by the d_off of the last record, counted into c.
 */
static int list_uring(int fd, unsigned int len, int by_d_off,
		      unsigned char sqe_flags, struct listing *l,
		      struct counts *c)
{
	static char buf[1 << 15];
	int64_t off = 0;
	int res, inl;

	l->n = 0;
	if (lseek(fd, 0, SEEK_SET) != 0)
		return fail("lseek: %s", strerror(errno));
	do {
		res = getdents_req(fd, buf, len, by_d_off ? off : -1,
				   sqe_flags, &inl);
		if (res < 0)
			return failure[0] ? 1 : fail("GETDENTS: %d", res);
		if (inl)
			c->inline_reads++;
		else
			c->punted_reads++;
		if (parse(l, buf, res))
			return 1;
		if (l->n)
			off = l->r[l->n - 1].off;
	} while (res > 0);
	return 0;
}

/*
 * Whether getdents64(2) from position off (lseek(2)) starts with record
 * i of want, or returns nothing if i is want's end.
 */
static int resumes_at(int fd, int64_t off, const struct listing *want, int i)
{
	static char buf[4096];
	const struct dirent64 *d = (const void *)buf;
	int n;

	if (lseek(fd, off, SEEK_SET) != off)
		return 0;
	n = syscall(__NR_getdents64, fd, buf, sizeof(buf));
	if (i == want->n)
		return n == 0;
	return n > 0 && d->d_ino == want->r[i].ino &&
	       !strcmp(d->d_name, want->r[i].name);
}

/*
 * got must be want, record for record. With fd (cold reads), the d_off of
 * a record that ends a read may differ: a read that stopped before a block
 * that is not cached cannot know the exact position of the next record,
 * which is in that block, and gives the position where it stopped; that
 * must resume the listing at the next record.
 */
static int compare(const struct listing *got, const struct listing *want,
		   const char *what, int fd)
{
	int i;

	for (i = 0; i < got->n && i < want->n; i++) {
		const struct record *a = &got->r[i], *b = &want->r[i];
		int off_ok = a->off == b->off ||
			     (fd >= 0 && a->ends_read &&
			      resumes_at(fd, a->off, want, i + 1));

		if (a->ino != b->ino || !off_ok || a->type != b->type ||
		    strcmp(a->name, b->name))
			return fail("%s: record %d is %s (d_off %lld), getdents64 has %s (d_off %lld)",
				    what, i, a->name, (long long)a->off,
				    b->name, (long long)b->off);
	}
	if (got->n != want->n)
		return fail("%s: %d records, getdents64 has %d", what, got->n,
			    want->n);
	return 0;
}

/*
 * After a change, before the read that warms a directory:
 *
 * - Timestamps are coarse (a jiffy): a directory read in the tick it
 *   changed in keeps needing an atime update under relatime, so wait for
 *   the next tick.
 * - The directory's metadata is written back in the background for a
 *   while (XFS's AIL, ext4's journal), and a buffer under writeback is
 *   locked: XFS's trylock then sends the read to io-wq, as it should.
 *   Freezing the filesystem writes everything back now.
 */
static int settle(void)
{
	struct timespec t = { 0, 50 * 1000 * 1000 };

	nanosleep(&t, NULL);
	if (fs_type == TMPFS_MAGIC)
		return 0;
	sync();
	if (ioctl(base_fd, FIFREEZE, 0) || ioctl(base_fd, FITHAW, 0))
		return fail("freeze/thaw: %s", strerror(errno));
	return 0;
}

/* base/name with n files of name lengths 7 to 46; an open fd to it. */
static int make_dir(const char *name, int n, int *fd_out)
{
	int dfd, i;

	if (mkdirat(base_fd, name, 0700))
		return fail("mkdir %s: %s", name, strerror(errno));
	dfd = openat(base_fd, name, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return fail("open %s: %s", name, strerror(errno));
	for (i = 0; i < n; i++) {
		char file[NAME_LEN];
		int fd;

		snprintf(file, sizeof(file), "f%05d-%.*s", i, i % 40,
			 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
		fd = openat(dfd, file, O_CREAT | O_WRONLY, 0600);
		if (fd < 0)
			return fail("create %s: %s", file, strerror(errno));
		close(fd);
	}
	*fd_out = dfd;
	return 0;
}

static int test_async_is_seen_as_punted(void)
{
	struct counts forced = { 0 }, plain = { 0 };
	int dfd;

	if (make_dir("async", 30, &dfd) || settle())
		return 1;
	if (reference(dfd, &want) ||
	    list_uring(dfd, 4096, 0, IOSQE_ASYNC, &got, &forced) ||
	    compare(&got, &want, "IOSQE_ASYNC", -1))
		return 1;
	if (forced.inline_reads)
		return fail("%ld of %ld reads with IOSQE_ASYNC seen as inline",
			    forced.inline_reads,
			    forced.inline_reads + forced.punted_reads);
	if (list_uring(dfd, 4096, 0, 0, &got, &plain) ||
	    compare(&got, &want, "warm", -1))
		return 1;
	if (plain.punted_reads)
		return fail("%ld of %ld reads of a warm directory punted",
			    plain.punted_reads,
			    plain.inline_reads + plain.punted_reads);
	close(dfd);
	return 0;
}

/*
 * Small (a block on ext4, shortform on XFS), medium and large (htree on
 * ext4, several blocks in every format), all read once: every GETDENTS
 * completes inline, with 4 KiB and 32 KiB buffers, chained at -1 and by
 * d_off, and returns the getdents64 listing.
 */
static int test_warm_directories_complete_inline(void)
{
	static const int sizes[] = { 8, 250, 3000 };
	char name[32];
	int i, j;

	for (i = 0; i < 3; i++) {
		int dfd;

		snprintf(name, sizeof(name), "warm-%d", sizes[i]);
		if (make_dir(name, sizes[i], &dfd) || settle() ||
		    reference(dfd, &want))
			return 1;
		for (j = 0; j < 4; j++) {
			struct counts c = { 0 };
			char what[64];

			snprintf(what, sizeof(what), "%s, %d KiB reads %s",
				 name, j & 1 ? 32 : 4, j & 2 ? "by d_off" : "at -1");
			if (list_uring(dfd, j & 1 ? 32768 : 4096, j & 2, 0,
				       &got, &c) ||
			    compare(&got, &want, what, -1))
				return 1;
			if (c.punted_reads)
				return fail("%s: %ld of %ld reads punted", what,
					    c.punted_reads,
					    c.punted_reads + c.inline_reads);
		}
		close(dfd);
	}
	return 0;
}

/*
 * A read that would update atime is not made inline on a disk filesystem
 * (a journal transaction): after a change, the first read goes to io-wq,
 * which updates atime; with relatime the next one is inline again. tmpfs
 * updates atime in memory, inline.
 */
static int test_atime_update_goes_to_io_wq(void)
{
	struct counts first = { 0 }, second = { 0 };
	struct statvfs sv;
	int dfd, fd, disk, expect_punt;

	if (make_dir("atime", 20, &dfd) || fstatvfs(dfd, &sv))
		return 1;
	disk = fs_type != TMPFS_MAGIC;
	expect_punt = disk && !(sv.f_flag & (ST_NOATIME | ST_NODIRATIME));
	if (settle() || reference(dfd, &want))
		return 1;
	fd = openat(dfd, "changed", O_CREAT | O_WRONLY, 0600);
	if (fd < 0)
		return fail("create: %s", strerror(errno));
	close(fd);
	if (settle())
		return 1;
	/* One read of everything, then the empty read at the end. */
	if (list_uring(dfd, 32768, 0, 0, &got, &first) || reference(dfd, &want) ||
	    compare(&got, &want, "after a change", -1))
		return 1;
	if (expect_punt && first.punted_reads != 1)
		return fail("%ld of %ld reads after a change punted, expected the first",
			    first.punted_reads,
			    first.punted_reads + first.inline_reads);
	if (!expect_punt && first.punted_reads)
		return fail("%ld reads punted where atime is updated in memory",
			    first.punted_reads);
	if (list_uring(dfd, 32768, 0, 0, &got, &second) ||
	    compare(&got, &want, "read again", -1))
		return 1;
	if ((sv.f_flag & ST_RELATIME || !expect_punt) && second.punted_reads)
		return fail("%ld reads punted after atime was updated",
			    second.punted_reads);
	close(dfd);
	return 0;
}

/*
 * atime is decided once, before an inline read (kernel/patches 0007): a
 * read that completed inline on a disk filesystem never moved atime, since
 * an update there is a journal transaction, even where the clock ticked
 * during the read. A decision made again after the read, as
 * file_accessed() makes it, would start that transaction in the
 * submitting task. Under strictatime (a bind mount of the directory) every
 * tick makes an update due, so reads of a large directory keep crossing
 * ticks; those that find one due before they start go to io-wq. tmpfs
 * updates atime in memory, inline: nothing to check there.
 */
static int test_inline_reads_leave_atime(void)
{
	static char buf[1 << 15];
	char src[PATH_MAX + 16], point[PATH_MAX + 16];
	struct counts c = { 0 };
	int dfd, fd = -1, pass, res, inl, ret = 1;

	if (fs_type == TMPFS_MAGIC)
		return 0;
	if (make_dir("atime-strict", 3000, &dfd))
		return 1;
	close(dfd);
	snprintf(src, sizeof(src), "%s/atime-strict", base);
	snprintf(point, sizeof(point), "%s/strict", base);
	if (mkdir(point, 0700))
		return fail("mkdir %s: %s", point, strerror(errno));
	if (mount(src, point, NULL, MS_BIND, NULL))
		return fail("bind mount %s: %s", point, strerror(errno));
	if (mount(NULL, point, NULL, MS_REMOUNT | MS_BIND | MS_STRICTATIME,
		  NULL)) {
		fail("remount %s strictatime: %s", point, strerror(errno));
		goto out;
	}
	fd = open(point, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		fail("open %s: %s", point, strerror(errno));
		goto out;
	}
	if (settle())
		goto out;
	for (pass = 0; pass < 40; pass++) {
		if (lseek(fd, 0, SEEK_SET) != 0) {
			fail("lseek: %s", strerror(errno));
			goto out;
		}
		do {
			struct statx before, after;

			if (statx(fd, "", AT_EMPTY_PATH, STATX_ATIME, &before)) {
				fail("statx: %s", strerror(errno));
				goto out;
			}
			res = getdents_req(fd, buf, sizeof(buf), -1, 0, &inl);
			if (res < 0) {
				if (!failure[0])
					fail("GETDENTS: %d", res);
				goto out;
			}
			if (statx(fd, "", AT_EMPTY_PATH, STATX_ATIME, &after)) {
				fail("statx: %s", strerror(errno));
				goto out;
			}
			if (!inl) {
				c.punted_reads++;
				continue;
			}
			c.inline_reads++;
			if (before.stx_atime.tv_sec != after.stx_atime.tv_sec ||
			    before.stx_atime.tv_nsec != after.stx_atime.tv_nsec) {
				fail("a read that completed inline moved atime from %lld.%09u to %lld.%09u (a journal transaction in the submitting task)",
				     (long long)before.stx_atime.tv_sec,
				     before.stx_atime.tv_nsec,
				     (long long)after.stx_atime.tv_sec,
				     after.stx_atime.tv_nsec);
				goto out;
			}
		} while (res > 0);
	}
	if (!c.inline_reads || !c.punted_reads)
		fail("%ld reads inline, %ld punted: strictatime should send those that start in a new tick to io-wq, and leave the others inline",
		     c.inline_reads, c.punted_reads);
	else
		ret = 0;
	printf("  strictatime: %ld reads inline, %ld punted\n", c.inline_reads,
	       c.punted_reads);
out:
	if (fd >= 0)
		close(fd);
	umount2(point, MNT_DETACH);
	return ret;
}

/* What the permission listener of test_permission_event_not_inline saw. */
struct perm_listener {
	volatile int ready, submitted, done;
	volatile int events, held_too_long;
	char error[PATH_MAX + 256];
};

/*
 * The listener: a FAN_ACCESS_PERM mark on dir, then every event is held
 * until the submitting io_uring_enter has returned (l->submitted), or 5 s
 * if it never does, which means that the submission waited for the answer.
 */
static int perm_listen(const char *dir, struct perm_listener *l)
{
	char buf[4096] __attribute__((aligned(8)));
	int fan = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY);

	if (fan < 0 ||
	    fanotify_mark(fan, FAN_MARK_ADD, FAN_ACCESS_PERM | FAN_ONDIR,
			  AT_FDCWD, dir)) {
		snprintf(l->error, sizeof(l->error), "fanotify on %s: %s", dir,
			 strerror(errno));
		return 1;
	}
	l->ready = 1;
	for (;;) {
		struct pollfd p = { fan, POLLIN, 0 };
		struct fanotify_event_metadata *ev;
		ssize_t len;

		if (poll(&p, 1, 20) == 0) {
			if (l->done)
				return 0;
			continue;
		}
		len = read(fan, buf, sizeof(buf));
		if (len < 0) {
			snprintf(l->error, sizeof(l->error), "read fanotify: %s",
				 strerror(errno));
			return 1;
		}
		for (ev = (void *)buf; FAN_EVENT_OK(ev, len);
		     ev = FAN_EVENT_NEXT(ev, len)) {
			struct fanotify_response answer = { ev->fd, FAN_ALLOW };
			int waited;

			l->events++;
			for (waited = 0; !l->submitted && waited < 5000; waited++)
				usleep(1000);
			if (!l->submitted)
				l->held_too_long = 1;
			if (write(fan, &answer, sizeof(answer)) != sizeof(answer)) {
				snprintf(l->error, sizeof(l->error),
					 "answer fanotify: %s", strerror(errno));
				return 1;
			}
			close(ev->fd);
		}
	}
}

/*
 * A read that may raise a permission event (a FAN_ACCESS_PERM listener on
 * the directory) is not tried inline (kernel/patches 0004): the listener
 * answers when it likes, and the submitting task must not wait for it.
 * The listener holds its answer until the submission has returned; the
 * read completes in io-wq with getdents64's listing, and the event is
 * raised once, not inline and again after the punt.
 */
static int test_permission_event_not_inline(void)
{
	static char buf[1 << 15];
	struct perm_listener *l;
	struct io_uring_cqe cqe;
	char dir[PATH_MAX + 16];
	int dfd, fd, inl, ret = 1, waited, status;
	pid_t pid;

	if (make_dir("perm", 50, &dfd) || settle() || reference(dfd, &want))
		return 1;
	close(dfd);
	snprintf(dir, sizeof(dir), "%s/perm", base);
	l = mmap(NULL, sizeof(*l), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (l == MAP_FAILED)
		return fail("mmap: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		return fail("fork: %s", strerror(errno));
	if (pid == 0)
		_exit(perm_listen(dir, l));
	for (waited = 0; !l->ready && !l->error[0] && waited < 5000; waited++)
		usleep(1000);
	if (!l->ready) {
		fail("listener: %s", l->error[0] ? l->error : "not ready in 5 s");
		goto out;
	}
	/* Opened after the mark: the file may raise permission events. */
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		fail("open %s: %s", dir, strerror(errno));
		goto out;
	}
	getdents_sqe(&ring, fd, buf, sizeof(buf), -1);
	if (ring_enter(&ring, 1, 0, 0) != 1) {
		fail("io_uring_enter did not submit");
		goto out_fd;
	}
	l->submitted = 1;
	inl = peek_cqe(&ring, &cqe);
	while (!inl && !peek_cqe(&ring, &cqe))
		ring_enter(&ring, 0, 1, IORING_ENTER_GETEVENTS);
	got.n = 0;
	if (cqe.res < 0) {
		fail("GETDENTS with a permission listener: %d", cqe.res);
		goto out_fd;
	}
	if (parse(&got, buf, cqe.res) ||
	    compare(&got, &want, "with a permission listener", -1))
		goto out_fd;
	l->done = 1;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		pid = -1;
		fail("listener: %s", l->error[0] ? l->error : "died");
		goto out_fd;
	}
	pid = -1;
	if (l->held_too_long)
		fail("io_uring_enter waited for the permission listener's answer");
	else if (inl)
		fail("the read completed inline, with a permission listener");
	else if (l->events != 1)
		fail("%d permission events for one read", l->events);
	else
		ret = 0;
out_fd:
	close(fd);
out:
	if (pid > 0) {
		l->done = 1;
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	munmap(l, sizeof(*l));
	return ret;
}

/* The block device under base (/dev/NAME from sysfs), or -1. */
static int open_bdev(void)
{
	char path[160], line[128];
	struct stat st;
	int fd = -1;
	FILE *f;

	if (fstat(base_fd, &st))
		return -1;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent",
		 major(st.st_dev), minor(st.st_dev));
	f = fopen(path, "r");
	while (f && fd < 0 && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "DEVNAME=", 8))
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(path, sizeof(path), "/dev/%s", line + 8);
		fd = open(path, O_RDONLY);
	}
	if (f)
		fclose(f);
	return fd;
}

/*
 * Drops the caches of the filesystem of base: settle() writes back its
 * journal and metadata (otherwise the buffers stay pinned), BLKFLSBUF
 * drops the block device's buffers with the per-CPU buffer_head LRUs that
 * hold the last ones used (ext4), drop_caches frees the rest (XFS keeps
 * its own buffer cache, btrfs its tree blocks in a page cache of its own
 * and no buffer_heads). tmpfs has nothing to drop.
 */
static int drop_caches(void)
{
	int fd, i;

	if (settle())
		return 1;
	if (fs_type == TMPFS_MAGIC)
		return 0;
	if ((unsigned int)fs_type != BTRFS_SUPER_MAGIC) {
		fd = open_bdev();
		if (fd < 0 || ioctl(fd, BLKFLSBUF, 0))
			return fail("BLKFLSBUF on the device of %s: %s", base,
				    strerror(errno));
		close(fd);
	}
	/* XFS buffers age on the LRU: each pass frees older ones. */
	for (i = 0; i < 3; i++) {
		fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
		if (fd < 0 || write(fd, "3", 1) != 1)
			return fail("drop_caches: %s", strerror(errno));
		close(fd);
	}
	return 0;
}

/*
 * Cold directories, read in 4 KiB and 32 KiB reads at -1: whatever is not
 * cached is read in io-wq (on a disk filesystem at least one read is
 * punted), reads that stop at an uncached block resume correctly, and
 * the listing is exactly getdents64's. Read again, warm, all inline.
 */
static int test_cold_directories_match_getdents64(void)
{
	static const int sizes[] = { 250, 3000 };
	char name[32];
	int i, j;

	for (i = 0; i < 2; i++) {
		for (j = 0; j < 2; j++) {
			struct counts cold = { 0 }, warm = { 0 };
			unsigned int len = j ? 32768 : 4096;
			int dfd;

			snprintf(name, sizeof(name), "cold-%d-%u", sizes[i], len);
			if (make_dir(name, sizes[i], &dfd) || settle())
				return 1;
			if (reference(dfd, &want) || drop_caches() ||
			    list_uring(dfd, len, 0, 0, &got, &cold) ||
			    compare(&got, &want, name, dfd))
				return 1;
			printf("  %s: %ld reads inline, %ld punted\n", name,
			       cold.inline_reads, cold.punted_reads);
			if (fs_type != TMPFS_MAGIC && !cold.punted_reads)
				return fail("%s: no read punted after the caches were dropped",
					    name);
			if (list_uring(dfd, len, 0, 0, &got, &warm) ||
			    compare(&got, &want, name, -1))
				return 1;
			if (warm.punted_reads)
				return fail("%s: %ld reads punted once read",
					    name, warm.punted_reads);
			close(dfd);
		}
	}
	return 0;
}

/* --walk: every directory under dfd, counted into c. */
static int walk(int dfd, struct counts *c, long *dirs)
{
	enum { LEN = 1 << 15 };
	char *buf = malloc(LEN);
	int res, inl, pos;

	if (!buf)
		return fail("out of memory");
	++*dirs;
	do {
		res = getdents_req(dfd, buf, LEN, -1, 0, &inl);
		if (res < 0)
			return failure[0] ? 1 : fail("GETDENTS: %d", res);
		if (inl)
			c->inline_reads++;
		else
			c->punted_reads++;
		for (pos = 0; pos < res;) {
			struct dirent64 *d = (void *)(buf + pos);
			int sub;

			pos += d->d_reclen;
			if (d->d_type != DT_DIR || !strcmp(d->d_name, ".") ||
			    !strcmp(d->d_name, ".."))
				continue;
			sub = openat(dfd, d->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
			if (sub < 0)
				return fail("open %s: %s", d->d_name, strerror(errno));
			if (walk(sub, c, dirs))
				return 1;
			close(sub);
		}
	} while (res > 0);
	free(buf);
	return 0;
}

static int walk_main(const char *dir)
{
	struct counts c = { 0 };
	long dirs = 0, reads;
	int fd = open(dir, O_RDONLY | O_DIRECTORY);

	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", dir, strerror(errno));
		return 1;
	}
	if (walk(fd, &c, &dirs)) {
		fprintf(stderr, "walk %s: %s\n", dir, failure);
		return 1;
	}
	reads = c.inline_reads + c.punted_reads;
	printf("walk %s: dirs=%ld reads=%ld inline=%ld punted=%ld inline_pct=%.2f\n",
	       dir, dirs, reads, c.inline_reads, c.punted_reads,
	       reads ? 100.0 * c.inline_reads / reads : 0.0);
	return 0;
}

/*
 * --time PROGRAM ARGS: runs it with stdout on /dev/null and prints its
 * elapsed CLOCK_MONOTONIC time (guest time, under QEMU's icount the
 * instructions executed), its CPU time and its context switches, io-wq
 * workers included (they are threads of the process).
 */
static int time_main(char **argv)
{
	struct timespec t0, t1;
	struct rusage ru;
	int status;
	pid_t pid;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid < 0)
		return perror("fork"), 1;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null < 0 || dup2(null, 1) < 0)
			_exit(126);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) != pid)
		return perror("wait4"), 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("ms=%.1f user_ms=%.0f sys_ms=%.0f vcsw=%ld ivcsw=%ld status=%d\n",
	       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
	       ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3,
	       ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3,
	       ru.ru_nvcsw, ru.ru_nivcsw,
	       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	return 0;
}

int main(int argc, char **argv)
{
	/*
	 * exclusive: dropping caches and mounting are global, and test-vm
	 * runs this binary on several filesystems at once beside the other
	 * suites, whose tests that drop caches or mount (getdents-test,
	 * kernel_plus.rs, traverse's uring.rs) lock CACHE_LOCK exclusively.
	 * A test here that does either locks it exclusively too, the others
	 * share it: caches are never dropped under a test that expects them
	 * warm, and no mount ends another suite's dcache-only walk.
	 */
	static const struct {
		const char *name;
		int (*fn)(void);
		int exclusive;
	} tests[] = {
		{ "async_is_seen_as_punted", test_async_is_seen_as_punted, 0 },
		{ "warm_directories_complete_inline",
		  test_warm_directories_complete_inline, 0 },
		{ "atime_update_goes_to_io_wq", test_atime_update_goes_to_io_wq, 0 },
		{ "inline_reads_leave_atime", test_inline_reads_leave_atime, 1 },
		{ "permission_event_not_inline",
		  test_permission_event_not_inline, 0 },
		{ "cold_directories_match_getdents64",
		  test_cold_directories_match_getdents64, 1 },
	};
	const char *tmp = getenv("TMPDIR");
	int n = sizeof(tests) / sizeof(tests[0]);
	int i, passed = 0, failed = 0, ret, lock_fd;
	struct timespec t0;
	struct statfs sfs;

	if (argc > 2 && !strcmp(argv[1], "--time"))
		return time_main(argv + 2);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = ring_init(&ring, 8,
			IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
	if (ret) {
		fprintf(stderr, "io_uring_setup: %s\n", strerror(-ret));
		return 1;
	}
	if (!getdents_available(&ring))
		return getdents_missing(OP_GETDENTS) ? 1 : 0;
	if (argc == 3 && !strcmp(argv[1], "--walk"))
		return walk_main(argv[2]);
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--walk DIR | --time PROGRAM ARG...]\n",
			argv[0]);
		return 2;
	}
	snprintf(base, sizeof(base), "%s/nowait-test.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(base) || (base_fd = open(base, O_RDONLY | O_DIRECTORY)) < 0 ||
	    fstatfs(base_fd, &sfs)) {
		fprintf(stderr, "%s: %s\n", base, strerror(errno));
		return 1;
	}
	fs_type = sfs.f_type;
	lock_fd = open(CACHE_LOCK, O_RDWR | O_CREAT, 0666);
	if (lock_fd < 0) {
		fprintf(stderr, "%s: %s\n", CACHE_LOCK, strerror(errno));
		return 1;
	}
	printf("running %d tests in %s (filesystem 0x%lx)\n", n, base, fs_type);
	for (i = 0; i < n; i++) {
		failure[0] = '\0';
		if (flock(lock_fd, tests[i].exclusive ? LOCK_EX : LOCK_SH)) {
			fprintf(stderr, "flock %s: %s\n", CACHE_LOCK, strerror(errno));
			return 1;
		}
		ret = tests[i].fn();
		flock(lock_fd, LOCK_UN);
		report_test(tests[i].name, ret, failure, &passed, &failed);
	}
	remove_tree(base_fd);
	rmdir(base);
	report_result(passed, failed, &t0);
	return failed ? 1 : 0;
}
