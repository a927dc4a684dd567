#!/usr/bin/env python3
"""benchmark/seed_table.py's machine-shape settings, checked without running anything: a dry run
with the anchor's 16-core setting (servers on CPUs 0-7 with 8 workers, the load client on 8-15
with 8 threads) must pin and size every command accordingly, and the default shape of a 2-core
machine must be today's (server on CPU 1, client on CPU 0, 1 worker). The script's real run,
on a tiny budget, is seed_table_smoke_test (script_smoke_test.py)."""

import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmark", "seed_table.py")
sys.path.insert(0, os.path.join(ROOT, "benchmark"))
sys.dont_write_bytecode = True  # no __pycache__ left in the checkout
import seed_table  # noqa: E402


def dry_run(*args):
    out = subprocess.run([sys.executable, SCRIPT, "--dry-run", "--build", "/nonexistent", *args],
                         capture_output=True, text=True, check=True).stdout
    servers = [l[len("server: "):].split() for l in out.splitlines() if l.startswith("server: ")]
    loads = [l[len("load:   "):].split() for l in out.splitlines() if l.startswith("load:   ")]
    yamls = re.findall(r"# yaml for (\S+):\n((?:#   .*\n?)+)", out)
    return servers, loads, yamls


def flag(cmd, name):
    return cmd[cmd.index(name) + 1] if name in cmd else None


class SixteenCores(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.servers, cls.loads, cls.yamls = dry_run(
            "--server-cpus", "0-7", "--client-cpus", "8-15", "--workers", "8",
            "--client-threads", "8")

    def test_every_load_runs_on_the_client_cpus_with_8_threads(self):
        self.assertGreater(len(self.loads), 20)
        for cmd in self.loads:
            self.assertEqual(cmd[:3], ["taskset", "-c", "8-15"], cmd)
            self.assertEqual(flag(cmd, "--threads"), "8", cmd)
            self.assertEqual(flag(cmd, "--cpus"), "8,9,10,11,12,13,14,15", cmd)
            self.assertEqual(flag(cmd, "--connections"), "800", cmd)

    def test_servers_are_pinned_and_sized(self):
        pinned = {}
        for cmd in self.servers:
            self.assertEqual(cmd[:2], ["taskset", "-c"], cmd)
            pinned.setdefault(os.path.basename(cmd[3]), set()).add(cmd[2])
            if cmd[3].endswith("raw_echo_server"):
                self.assertEqual((cmd[2], flag(cmd, "--threads")), ("0-7", "8"))
        # The forward benchmark's echo backend runs beside the client; every other server on
        # the server CPUs, the scaling section on their first 1, 2, 4 and 8.
        self.assertEqual(pinned["forward_server"], {"0-7"})
        self.assertEqual(pinned["echo_server"], {"0", "0-1", "0-3", "0-7", "8-15"})
        self.assertIn("grpc_echo_server", pinned)

    def test_the_yaml_gives_the_workers(self):
        sizes = set()
        for name, text in self.yamls:
            m = re.search(r"(io_thread_num|concurrency_hint): (\d+)", text)
            self.assertIsNotNone(m, text)
            sizes.add(int(m.group(2)))
        self.assertEqual(sizes, {1, 2, 4, 8})  # 8 everywhere, 1..8 in the scaling section

    def test_the_long_tail_test_is_pinned_too(self):
        # The long-tail loads by their delay: the uneven-load section tags requests too.
        tail = [c for c in self.loads if flag(c, "--tail-delay") == seed_table.TAIL_DELAY]
        self.assertTrue(tail)
        for cmd in tail:
            self.assertEqual(flag(cmd, "--qps"), "10000")


    def test_the_uneven_load_section_runs_both_cases(self):
        # (a) half of all requests on one connection with 64 calls in flight; (b) 5% of
        # requests spinning 200 us on the server. Both models each, on the client CPUs.
        hot = [c for c in self.loads if flag(c, "--hot-share") == "0.5"]
        self.assertTrue(hot)
        for cmd in hot:
            self.assertEqual(flag(cmd, "--hot-inflight"), "64", cmd)
        spin = [c for c in self.loads
                if flag(c, "--tail-kind") == "spin" and flag(c, "--tail-ratio") == "0.05"]
        self.assertTrue(spin)
        for cmd in spin:
            self.assertEqual(flag(cmd, "--tail-delay"), "200us", cmd)


class TwoCores(unittest.TestCase):
    def test_the_uneven_load_section_is_skipped_unless_asked(self):
        _, loads, _ = dry_run("--server-cpus", "1", "--client-cpus", "0")
        self.assertFalse([c for c in loads if flag(c, "--hot-share")])
        _, loads, _ = dry_run("--server-cpus", "1", "--client-cpus", "0", "--uneven")
        self.assertTrue([c for c in loads if flag(c, "--hot-share") == "0.5"])

    def test_default_shape_of_two_cpus(self):
        shape = seed_table.Shape.default(2)
        self.assertEqual((shape.server_cpus, shape.client_cpus, shape.workers,
                          shape.client_threads, shape.longtail_pinned), ([1], [0], 1, 1, False))

    def test_default_shape_of_sixteen_and_more(self):
        shape = seed_table.Shape.default(64)
        self.assertEqual((shape.server_cpus, shape.client_cpus[0], shape.workers,
                          shape.client_threads), (list(range(8)), 8, 8, 56))

    def test_cpu_lists(self):
        self.assertEqual(seed_table.parse_cpus("0-3,6"), [0, 1, 2, 3, 6])
        self.assertEqual(seed_table.cpu_list([0, 1, 2, 3]), "0-3")
        self.assertEqual(seed_table.cpu_list([1]), "1")

    def test_verdicts(self):
        self.assertEqual(seed_table.verdict("le", 5, 15), "met")
        self.assertEqual(seed_table.verdict("le", 25, 40), "missed")
        self.assertEqual(seed_table.verdict("le", 10, 30), "undecided at this noise")
        self.assertEqual(seed_table.verdict("gt", 100, 400), "met")
        lo, hi = seed_table.bootstrap_ci([1, 2, 3, 4, 100, 5, 6, 7, 8])
        self.assertLessEqual(lo, 5)
        self.assertGreaterEqual(hi, 5)


if __name__ == "__main__":
    unittest.main()
