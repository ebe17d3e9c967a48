/* SPDX-License-Identifier: MIT */
/*
 * Description: test IORING_OP_GETDENTS (io_uring_prep_getdents()) against
 *		getdents64(2): listings at the file position, chained one read
 *		at a time and linked in one submission, on the default ring,
 *		with IOSQE_ASYNC, a registered file, SQPOLL and DEFER_TASKRUN;
 *		reads from d_off positions; the errors getdents64(2) gives for
 *		the same arguments; a linked read cancelled with its timeout;
 *		a process that exits with reads in flight.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "liburing.h"
#include "helpers.h"

#define NR_FILES	300
#define BUF_SIZE	1024
#define MAX_RECORDS	(NR_FILES + 8)
#define NR_LINKED	64

struct record {
	unsigned long long ino;
	long long off;
	unsigned char type;
	char name[256];
};

struct listing {
	int nr;
	struct record r[MAX_RECORDS];
};

static char dir_path[64];

/* Appends the linux_dirent64 records of buf[0..len) to l. */
static int parse(struct listing *l, const char *buf, int len)
{
	int pos = 0;

	while (pos < len) {
		unsigned short reclen;
		struct record *r;

		if (len - pos < 20 || l->nr == MAX_RECORDS) {
			fprintf(stderr, "bad record at %d of %d\n", pos, len);
			return T_EXIT_FAIL;
		}
		r = &l->r[l->nr++];
		memcpy(&r->ino, buf + pos, 8);
		memcpy(&r->off, buf + pos + 8, 8);
		memcpy(&reclen, buf + pos + 16, 2);
		r->type = buf[pos + 18];
		if (reclen < 20 || reclen > len - pos) {
			fprintf(stderr, "record length %u at %d\n", reclen, pos);
			return T_EXIT_FAIL;
		}
		snprintf(r->name, sizeof(r->name), "%.*s", reclen - 19,
			 buf + pos + 19);
		pos += reclen;
	}
	return T_EXIT_PASS;
}

/* The reference: getdents64(2) on its own descriptor, from position off. */
static int list_syscall(struct listing *l, long long off)
{
	char buf[BUF_SIZE];
	int fd, ret;

	l->nr = 0;
	fd = open(dir_path, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		perror("open");
		return T_EXIT_FAIL;
	}
	if (off && lseek(fd, off, SEEK_SET) < 0) {
		perror("lseek");
		close(fd);
		return T_EXIT_FAIL;
	}
	while ((ret = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		if (parse(l, buf, ret)) {
			close(fd);
			return T_EXIT_FAIL;
		}
	}
	close(fd);
	if (ret < 0) {
		perror("getdents64");
		return T_EXIT_FAIL;
	}
	return T_EXIT_PASS;
}

static int compare(const struct listing *got, const struct listing *want,
		   const char *what)
{
	int i;

	if (got->nr != want->nr) {
		fprintf(stderr, "%s: %d records, getdents64 gave %d\n", what,
			got->nr, want->nr);
		return T_EXIT_FAIL;
	}
	for (i = 0; i < want->nr; i++) {
		const struct record *a = &got->r[i], *b = &want->r[i];

		if (a->ino != b->ino || a->off != b->off ||
		    a->type != b->type || strcmp(a->name, b->name)) {
			fprintf(stderr, "%s: record %d is %s (ino %llu off %lld "
				"type %u), getdents64 gave %s (ino %llu off "
				"%lld type %u)\n", what, i, a->name, a->ino,
				a->off, a->type, b->name, b->ino, b->off,
				b->type);
			return T_EXIT_FAIL;
		}
	}
	return T_EXIT_PASS;
}

/* One read; returns its result, or -ENOBUFS when io_uring itself failed. */
static int read_one(struct io_uring *ring, int fd, void *buf, unsigned len,
		    __u64 off, unsigned sqe_flags)
{
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	int ret;

	sqe = io_uring_get_sqe(ring);
	io_uring_prep_getdents(sqe, fd, buf, len, off);
	sqe->flags |= sqe_flags;
	ret = t_submit_and_wait_single(ring, &cqe);
	if (ret < 0)
		return -ENOBUFS;
	ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return ret;
}

/*
 * Lists the directory one read at a time at the file position (off -1),
 * which must give getdents64(2)'s records, then 0 at the end.
 */
static int test_chained(struct io_uring *ring, unsigned sqe_flags,
			int fixed, const char *what)
{
	static struct listing got, want;
	char buf[BUF_SIZE];
	int fd, ret, target;

	if (list_syscall(&want, 0))
		return T_EXIT_FAIL;
	fd = open(dir_path, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		perror("open");
		return T_EXIT_FAIL;
	}
	target = fd;
	if (fixed) {
		ret = io_uring_register_files(ring, &fd, 1);
		if (ret) {
			fprintf(stderr, "register_files: %d\n", ret);
			close(fd);
			return T_EXIT_FAIL;
		}
		target = 0;
		sqe_flags |= IOSQE_FIXED_FILE;
	}
	got.nr = 0;
	do {
		ret = read_one(ring, target, buf, sizeof(buf), -1ULL,
			       sqe_flags);
		if (ret > 0 && parse(&got, buf, ret))
			ret = -EIO;
	} while (ret > 0);
	if (fixed)
		io_uring_unregister_files(ring);
	close(fd);
	if (ret < 0) {
		fprintf(stderr, "%s: read failed: %d\n", what, ret);
		return T_EXIT_FAIL;
	}
	return compare(&got, &want, what);
}

/*
 * Reads linked in one submission at the file position list the directory
 * in order; those past the end complete with 0.
 */
static int test_linked(struct io_uring *ring)
{
	static struct listing got, want;
	static char bufs[NR_LINKED][BUF_SIZE];
	struct io_uring_cqe *cqe;
	int fd, i, ret, res[NR_LINKED], zeros = 0;

	if (list_syscall(&want, 0))
		return T_EXIT_FAIL;
	fd = open(dir_path, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		perror("open");
		return T_EXIT_FAIL;
	}
	for (i = 0; i < NR_LINKED; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

		io_uring_prep_getdents(sqe, fd, bufs[i], BUF_SIZE, -1ULL);
		if (i != NR_LINKED - 1)
			sqe->flags |= IOSQE_IO_LINK;
		sqe->user_data = i;
	}
	ret = io_uring_submit(ring);
	if (ret != NR_LINKED) {
		fprintf(stderr, "submit: %d\n", ret);
		close(fd);
		return T_EXIT_FAIL;
	}
	for (i = 0; i < NR_LINKED; i++) {
		ret = io_uring_wait_cqe(ring, &cqe);
		if (ret) {
			fprintf(stderr, "wait_cqe: %d\n", ret);
			close(fd);
			return T_EXIT_FAIL;
		}
		res[cqe->user_data] = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	}
	close(fd);
	got.nr = 0;
	for (i = 0; i < NR_LINKED; i++) {
		if (res[i] < 0) {
			fprintf(stderr, "linked read %d: %d\n", i, res[i]);
			return T_EXIT_FAIL;
		}
		if (!res[i]) {
			zeros++;
			continue;
		}
		if (zeros) {
			fprintf(stderr, "linked read %d has data after an "
				"empty read\n", i);
			return T_EXIT_FAIL;
		}
		if (parse(&got, bufs[i], res[i]))
			return T_EXIT_FAIL;
	}
	if (!zeros) {
		fprintf(stderr, "%d linked reads never reached the end\n",
			NR_LINKED);
		return T_EXIT_FAIL;
	}
	return compare(&got, &want, "linked");
}

/*
 * A read from 0 or from a d_off gives what lseek(2) to it and
 * getdents64(2) give. Kernels that read only at the file position refuse
 * other offsets with -EINVAL: skipped then.
 */
static int test_offsets(struct io_uring *ring)
{
	static struct listing all, got, want;
	char buf[BUF_SIZE];
	int fd, i, ret;

	if (list_syscall(&all, 0))
		return T_EXIT_FAIL;
	fd = open(dir_path, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		perror("open");
		return T_EXIT_FAIL;
	}
	ret = read_one(ring, fd, buf, sizeof(buf), 0, 0);
	if (ret == -EINVAL) {
		close(fd);
		return T_EXIT_SKIP;
	}
	for (i = 0; i < all.nr; i += all.nr / 7 + 1) {
		long long start = i ? all.r[i - 1].off : 0;

		if (list_syscall(&want, start))
			break;
		got.nr = 0;
		do {
			ret = read_one(ring, fd, buf, sizeof(buf), start, 0);
			if (ret > 0 && parse(&got, buf, ret))
				ret = -EIO;
			if (ret > 0)
				start = got.r[got.nr - 1].off;
		} while (ret > 0);
		if (ret < 0) {
			fprintf(stderr, "read at offset %lld: %d\n", start,
				ret);
			break;
		}
		if (compare(&got, &want, "offsets"))
			break;
	}
	close(fd);
	return i < all.nr ? T_EXIT_FAIL : T_EXIT_PASS;
}

/* The result getdents64(2) gives for the same arguments, as -errno. */
static int syscall_result(int fd, void *buf, unsigned len)
{
	int ret = syscall(SYS_getdents64, fd, buf, len);

	return ret < 0 ? -errno : ret;
}

static int test_errors(struct io_uring *ring)
{
	char buf[BUF_SIZE];
	struct {
		const char *what;
		int fd;
		void *buf;
		unsigned len;
	} cases[4];
	int file, dir, i, ret, want;

	dir = open(dir_path, O_RDONLY | O_DIRECTORY);
	if (dir < 0) {
		perror("open");
		return T_EXIT_FAIL;
	}
	file = openat(dir, "f0", O_RDONLY);
	if (file < 0) {
		perror("openat");
		close(dir);
		return T_EXIT_FAIL;
	}
	cases[0] = (typeof(cases[0])) { "regular file", file, buf, BUF_SIZE };
	cases[1] = (typeof(cases[1])) { "8-byte buffer", dir, buf, 8 };
	cases[2] = (typeof(cases[2])) { "NULL buffer", dir, NULL, BUF_SIZE };
	cases[3] = (typeof(cases[3])) { "closed fd", 1000, buf, BUF_SIZE };
	for (i = 0; i < 4; i++) {
		/* Each from the start of the directory, for both. */
		lseek(dir, 0, SEEK_SET);
		want = syscall_result(cases[i].fd, cases[i].buf, cases[i].len);
		lseek(dir, 0, SEEK_SET);
		ret = read_one(ring, cases[i].fd, cases[i].buf, cases[i].len,
			       -1ULL, 0);
		if (want >= 0 || ret != want) {
			fprintf(stderr, "%s: %d, getdents64 gave %d\n",
				cases[i].what, ret, want);
			break;
		}
	}
	close(file);
	close(dir);
	return i < 4 ? T_EXIT_FAIL : T_EXIT_PASS;
}

/*
 * A read linked behind a timeout that is removed completes with
 * -ECANCELED, without touching its buffer.
 */
static int test_cancel_linked(struct io_uring *ring)
{
	struct __kernel_timespec ts = { .tv_sec = 30 };
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	char buf[BUF_SIZE];
	int fd, i, ret, res[3] = { 1, 1, 1 };

	fd = open(dir_path, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		perror("open");
		return T_EXIT_FAIL;
	}
	memset(buf, 0x5a, sizeof(buf));
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_timeout(sqe, &ts, 0, 0);
	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = 0;
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_getdents(sqe, fd, buf, sizeof(buf), -1ULL);
	sqe->user_data = 1;
	ret = io_uring_submit(ring);
	if (ret != 2) {
		fprintf(stderr, "submit: %d\n", ret);
		close(fd);
		return T_EXIT_FAIL;
	}
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_timeout_remove(sqe, 0, 0);
	sqe->user_data = 2;
	io_uring_submit(ring);
	for (i = 0; i < 3; i++) {
		ret = io_uring_wait_cqe(ring, &cqe);
		if (ret) {
			fprintf(stderr, "wait_cqe: %d\n", ret);
			close(fd);
			return T_EXIT_FAIL;
		}
		if (cqe->user_data < 3)
			res[cqe->user_data] = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	}
	close(fd);
	if (res[0] != -ECANCELED || res[1] != -ECANCELED || res[2] != 0) {
		fprintf(stderr, "timeout %d, read %d, remove %d\n", res[0],
			res[1], res[2]);
		return T_EXIT_FAIL;
	}
	for (i = 0; i < BUF_SIZE; i++) {
		if (buf[i] != 0x5a) {
			fprintf(stderr, "cancelled read wrote its buffer\n");
			return T_EXIT_FAIL;
		}
	}
	return T_EXIT_PASS;
}

/*
 * A child submits reads to io-wq and exits without waiting for them: the
 * ring's teardown must reap them and the child must end.
 */
static int test_exit_in_flight(void)
{
	int status, i;
	pid_t pid;

	pid = fork();
	if (pid < 0) {
		perror("fork");
		return T_EXIT_FAIL;
	}
	if (!pid) {
		static char bufs[32][BUF_SIZE];
		struct io_uring ring;
		int fd;

		if (io_uring_queue_init(32, &ring, 0))
			_exit(2);
		fd = open(dir_path, O_RDONLY | O_DIRECTORY);
		for (i = 0; i < 32; i++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

			io_uring_prep_getdents(sqe, fd, bufs[i], BUF_SIZE, -1ULL);
			sqe->flags |= IOSQE_ASYNC;
		}
		_exit(io_uring_submit(&ring) == 32 ? 0 : 3);
	}
	/* Waits at most 30 s for the child. */
	for (i = 0; i < 300; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		usleep(100000);
	}
	if (i == 300) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fprintf(stderr, "child with reads in flight did not exit\n");
		return T_EXIT_FAIL;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "child status %#x\n", status);
		return T_EXIT_FAIL;
	}
	return T_EXIT_PASS;
}

/* NR_FILES files, a directory and a symlink, for entries of every type. */
static int make_tree(void)
{
	char name[32];
	int dfd, fd, i;

	strcpy(dir_path, "./getdents-test.XXXXXX");
	if (!mkdtemp(dir_path)) {
		perror("mkdtemp");
		return T_EXIT_FAIL;
	}
	dfd = open(dir_path, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return T_EXIT_FAIL;
	for (i = 0; i < NR_FILES; i++) {
		/* Names of several lengths: records of several sizes. */
		snprintf(name, sizeof(name), "f%d%.*s", i, i % 17,
			 "_padding_padding_");
		if (i == 0)
			strcpy(name, "f0");
		fd = openat(dfd, name, O_CREAT | O_WRONLY, 0644);
		if (fd < 0) {
			perror("openat");
			close(dfd);
			return T_EXIT_FAIL;
		}
		close(fd);
	}
	if (mkdirat(dfd, "subdir", 0755) || symlinkat("f0", dfd, "link")) {
		perror("mkdirat/symlinkat");
		close(dfd);
		return T_EXIT_FAIL;
	}
	close(dfd);
	return T_EXIT_PASS;
}

static void remove_tree(void)
{
	struct listing *l = malloc(sizeof(*l));
	char path[sizeof(dir_path) + 260];
	int i;

	if (l && !list_syscall(l, 0)) {
		for (i = 0; i < l->nr; i++) {
			if (!strcmp(l->r[i].name, ".") ||
			    !strcmp(l->r[i].name, ".."))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir_path,
				 l->r[i].name);
			if (unlink(path))
				rmdir(path);
		}
	}
	free(l);
	rmdir(dir_path);
}

static int run_ring_tests(unsigned setup_flags, const char *what)
{
	struct io_uring ring;
	int ret;

	ret = t_create_ring(NR_LINKED + 4, &ring, setup_flags);
	if (ret == T_SETUP_SKIP) {
		printf("%s ring not supported, skipped\n", what);
		return T_EXIT_PASS;
	} else if (ret != T_SETUP_OK) {
		return T_EXIT_FAIL;
	}
	ret = test_chained(&ring, 0, 0, what);
	if (!ret)
		ret = test_chained(&ring, IOSQE_ASYNC, 0, "IOSQE_ASYNC");
	if (!ret)
		ret = test_chained(&ring, 0, 1, "fixed file");
	if (!ret)
		ret = test_linked(&ring);
	io_uring_queue_exit(&ring);
	return ret;
}

int main(int argc, char *argv[])
{
	struct io_uring_probe *probe;
	struct io_uring ring;
	int ret, supported;

	if (argc > 1)
		return T_EXIT_SKIP;

	probe = io_uring_get_probe();
	supported = probe && io_uring_opcode_supported(probe, IORING_OP_GETDENTS);
	io_uring_free_probe(probe);
	if (!supported) {
		printf("IORING_OP_GETDENTS (%d) not supported, skipped\n",
		       IORING_OP_GETDENTS);
		return T_EXIT_SKIP;
	}
	if (make_tree())
		return T_EXIT_FAIL;
	/*
	 * Opcode numbers of an unmerged operation are not stable: the probe
	 * may report another operation under this number (58 is
	 * IORING_OP_RECV_ZC from Linux 6.15 on), which refuses a directory.
	 */
	ret = t_create_ring(8, &ring, 0);
	if (ret != T_SETUP_OK) {
		ret = T_EXIT_FAIL;
		goto out;
	}
	{
		char buf[BUF_SIZE];
		int fd = open(dir_path, O_RDONLY | O_DIRECTORY);

		ret = read_one(&ring, fd, buf, sizeof(buf), -1ULL, 0);
		close(fd);
	}
	io_uring_queue_exit(&ring);
	if (ret == -EINVAL || ret == -ENOTSOCK || ret == -EOPNOTSUPP) {
		printf("opcode %d does not read directories (%d), skipped\n",
		       IORING_OP_GETDENTS, ret);
		ret = T_EXIT_SKIP;
		goto out;
	}

	ret = run_ring_tests(0, "default");
	if (ret) {
		fprintf(stderr, "default ring failed\n");
		goto out;
	}
	ret = run_ring_tests(IORING_SETUP_SQPOLL, "SQPOLL");
	if (ret) {
		fprintf(stderr, "SQPOLL ring failed\n");
		goto out;
	}
	if (t_probe_defer_taskrun()) {
		ret = run_ring_tests(IORING_SETUP_SINGLE_ISSUER |
				     IORING_SETUP_DEFER_TASKRUN,
				     "DEFER_TASKRUN");
		if (ret) {
			fprintf(stderr, "DEFER_TASKRUN ring failed\n");
			goto out;
		}
	}

	ret = t_create_ring(8, &ring, 0);
	if (ret != T_SETUP_OK) {
		ret = T_EXIT_FAIL;
		goto out;
	}
	ret = test_offsets(&ring);
	if (ret == T_EXIT_SKIP) {
		printf("reads from an offset not supported, skipped\n");
		ret = T_EXIT_PASS;
	} else if (ret) {
		fprintf(stderr, "test_offsets failed\n");
	}
	if (!ret) {
		ret = test_errors(&ring);
		if (ret)
			fprintf(stderr, "test_errors failed\n");
	}
	if (!ret) {
		ret = test_cancel_linked(&ring);
		if (ret)
			fprintf(stderr, "test_cancel_linked failed\n");
	}
	io_uring_queue_exit(&ring);
	if (!ret) {
		ret = test_exit_in_flight();
		if (ret)
			fprintf(stderr, "test_exit_in_flight failed\n");
	}
out:
	remove_tree();
	return ret;
}
