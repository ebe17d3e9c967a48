/* SPDX-License-Identifier: MIT */
/*
 * What kernel/getdents-test.c, kernel/getdents-liburing-test.c and
 * kernel/nowait-test.c share: the rule for a kernel without GETDENTS,
 * removing their scratch tree, and the lines they print in the format of
 * Rust's test harness, which .ci/run sums with the Rust suites ("test NAME
 * ... ok", "test result: ok. N passed; M failed; ..."). Included once per
 * program, after the system headers.
 */
#ifndef GETDENTS_C_TEST_H
#define GETDENTS_C_TEST_H

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
 * Whether fd is on a filesystem whose inline reads may stop short, before
 * a block that is not cached (ext4, XFS). The last record of such a read
 * carries the position where it stopped, at or before the next record's
 * d_off (kernel/README.md, "A short read's last d_off").
 */
static inline int short_reads_possible(int fd)
{
	struct statfs sfs;

	if (fstatfs(fd, &sfs))
		return 0;
	return sfs.f_type == EXT4_SUPER_MAGIC || sfs.f_type == XFS_SUPER_MAGIC;
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

#endif
