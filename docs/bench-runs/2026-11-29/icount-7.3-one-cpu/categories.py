"""Sums the warm profiles of results.txt (kernel/bench-vm with BENCH_PROFILE)
by what the code does, for uring and threads: one sample is 20 000
instructions. A symbol goes to the first category one of whose words it
contains; the idle loop is left out, as in profile.md.

Usage: python3 categories.py [results.txt] > categories.md
"""
import collections
import re
import sys

CATEGORIES = [
    ("kernel: path walk", [
        "link_path_walk", "lookup_one_at", "path_lookupat", "path_init",
        "set_nameidata", "terminate_walk", "try_to_unlazy", "lookup_fast",
        "__d_lookup_rcu", "complete_walk", "filename_lookup", "step_into",
        "handle_mounts", "legitimize", "may_lookup", "inode_permission",
        "generic_permission", "restore_nameidata", "strlen", "dput",
        "lockref", "__rcu_read", "find_positive_dentry", "walk_component",
        "path_put", "mntput", "hash_name"]),
    ("kernel: getattr and statx copy", [
        "getattr", "fillattr", "cp_statx", "statx", "security_inode"]),
    ("kernel: io_uring", ["io_", "tctx", "task_work"]),
    ("kernel: system call entry, getname", [
        "do_syscall", "entry_SYSCALL", "x64_sys_call", "syscall_",
        "strncpy_from_user", "getname", "putname", "__x64_sys",
        "exit_to_user", "rseq", "fpregs"]),
    ("kernel: directory read", [
        "filldir", "readdir", "iterate", "verify_dirent", "memchr", "ext4",
        "xfs", "htree", "dx_", "str2hash", "dirhash", "getdents",
        "offset_", "mas_", "mtree", "xa_"]),
    ("kernel: scheduler, interrupts, locks", [
        "schedule", "switch", "wake", "finish_task", "enqueue", "dequeue",
        "update_curr", "pick_", "futex", "raw_spin", "raw_write",
        "raw_read", "preempt", "irq", "hrtimer", "tick", "timer", "rcu_",
        "ttwu", "select_task", "account"]),
    ("kernel: memory", [
        "alloc", "free", "slab", "kmem", "page", "kfree", "kmalloc",
        "clear_", "memset", "memcpy", "copy_", "rep_movs", "might_resched",
        "might_sleep", "pcs", "zone", "lru", "folio"]),
]
IDLE = ("default_idle", "pv_native_safe_halt", "native_safe_halt",
        "default_idle_call", "cpuidle_idle_call", "do_idle", "arch_cpu_idle")


def category(dso, sym):
    if "traverse" in dso:
        return "user: traverse"
    if "libc" in dso or "ld-linux" in dso:
        return "user: libc"
    for name, words in CATEGORIES:
        if any(word in sym for word in words):
            return name
    return "kernel: other"


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "results.txt"
    samples = collections.defaultdict(collections.Counter)
    pattern = re.compile(
        r"profile case=(\S+) engine=(\S+) samples=(\d+) dso=(\S+) sym=(\S+)")
    for line in open(path):
        m = pattern.search(line)
        if not m or m.group(5) in IDLE:
            continue
        case, engine, n, dso, sym = m.groups()
        samples[(case, engine)][category(dso, sym)] += int(n)
    for case in ("warm-tmpfs", "warm-ext4", "warm-xfs"):
        uring, threads = samples[(case, "uring")], samples[(case, "threads")]
        print(f"## {case}: millions of instructions\n")
        print("| category | uring | threads |\n|---|---:|---:|")
        for name in sorted(set(uring) | set(threads), key=lambda k: -threads[k]):
            print(f"| {name} | {uring[name] * 0.02:.1f} | {threads[name] * 0.02:.1f} |")
        print(f"| all | {sum(uring.values()) * 0.02:.1f} | "
              f"{sum(threads.values()) * 0.02:.1f} |\n")


main()
