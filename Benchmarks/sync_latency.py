"""How long the disk takes to make a commit durable: the floor under a write's latency.

With `synchronous=FULL` every SQLite commit ends with an fdatasync of the WAL before its callers are
answered, and a write queued behind a commit in progress waits for that one and then its own. This
appends a commit-sized block (three 4 KB pages) to a file and syncs it, over and over, and prints
the sync's percentiles:

    python3 Benchmarks/sync_latency.py [--count N] [--dir DIR]

DIR (default: the system's temporary directory) should be on the file system that holds the store.
"""
import argparse
import os
import tempfile
import time


def measure(directory, count, block_size=3 * 4096):
    block = os.urandom(block_size)
    with tempfile.TemporaryDirectory(dir=directory) as folder:
        fd = os.open(os.path.join(folder, "wal"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            durations = []
            for _ in range(count):
                os.write(fd, block)
                started = time.perf_counter_ns()
                os.fdatasync(fd)
                durations.append((time.perf_counter_ns() - started) / 1e6)
        finally:
            os.close(fd)
    return sorted(durations)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=3000, help="syncs to time (default 3000)")
    parser.add_argument("--dir", default=None, help="a directory on the store's file system")
    options = parser.parse_args()
    durations = measure(options.dir, options.count)
    at = lambda share: durations[min(len(durations) - 1, int(share * len(durations)))]
    print(f"fdatasync after a 12 KB append, {options.count} times: p50 {at(0.5):.2f} ms, p90 {at(0.9):.2f}, "
          f"p99 {at(0.99):.2f}, p99.9 {at(0.999):.2f}, max {durations[-1]:.2f}, "
          f"mean {sum(durations) / len(durations):.2f}")


if __name__ == "__main__":
    main()
