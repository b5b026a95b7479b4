#!/usr/bin/python3
"""Service performance scenarios: starts torqued on loopback, drives it with torqued-load,
times the engine in process with torqued_bench, and prints each measured ratio against its bar.

    /usr/bin/python3 bench/service_scenarios.py [--build build/dev] [--repeats 3]
                                                [--seconds 5] [--soak-seconds 180] [--quick]

Every ratio compares two measurements taken in the same run, alternated and repeated: the
machine's other load moves both sides together. The spread of the per-repeat ratios is printed
as the noise. Throughput bars also print the machine's ceiling, measured in the same run: the
ratio no service could pass here, since every call costs at least its Echo (the same bytes both
ways, on the same CPUs as the load generator) plus the in-process compute of its states, and a
Session message at least a Session Echo. Reports go to bench/results/: a JSON file per run (not versioned), summary.json
and, with Debian's python3-matplotlib installed, batch_size.png (latency and throughput against
batch size).
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """torqued on loopback with its own data directory; metrics on, as in production."""
    started = []  # every server, stopped at exit whatever happens

    def __init__(self, build, workers, data_root):
        self.port = free_port()
        self.data = tempfile.mkdtemp(dir=data_root)
        self.log = open(os.path.join(self.data, "torqued.log"), "w+")
        self.process = subprocess.Popen(
            [os.path.join(build, "server", "torqued"), "--address=127.0.0.1",
             f"--port={self.port}", "--metrics-address=127.0.0.1",
             f"--metrics-port={free_port()}", f"--data-dir={self.data}/store",
             f"--model-repository={ROOT}/deploy/models", f"--workers={workers}",
             "--log-level=info"],
            stdout=self.log, stderr=subprocess.STDOUT)
        Server.started.append(self)
        deadline = time.time() + 60
        while time.time() < deadline:
            self.log.seek(0)
            if "SERVING" in self.log.read():
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.log.seek(0)
        raise RuntimeError("torqued did not start:\n" + self.log.read())

    def rss_kib(self):
        with open(f"/proc/{self.process.pid}/status") as f:
            return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))

    def cpu_seconds(self):
        """User + system CPU time the server has used."""
        with open(f"/proc/{self.process.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=60)
        self.log.close()


class Runner:
    def __init__(self, args):
        self.args = args
        self.load = os.path.join(args.build, "clients", "cpp", "load", "torqued-load")
        self.bench = os.path.join(args.build, "bench", "torqued_bench")
        self.count = 0
        shared = os.path.join(ROOT, "..", "shared", "models", "ur5.urdf")
        self.urdf = shared if os.path.exists(shared) else os.path.join(
            ROOT, "deploy", "models", "double_pendulum.urdf")
        # A compute-bound batched load for worker scaling: a humanoid's forward dynamics (ABA,
        # about 5.6 us per state) against about 1 kB of request per state.
        talos = os.path.join(ROOT, "..", "shared", "models", "talos_reduced.urdf")
        self.heavy = (("--urdf", talos, "--floating-base") if os.path.exists(talos)
                      else ("--model", "quadruped"))

    def load_run(self, server, *options, seconds=None, warmup=None, model=None):
        """One torqued-load run (on ur5 unless `model` gives other model options); returns its
        JSON report."""
        self.count += 1
        report = os.path.join(RESULTS, f"run-{self.count:03d}.json")
        command = [self.load, f"--target=127.0.0.1:{server.port}",
                   *(model or ("--urdf", self.urdf)),
                   "--duration", str(seconds or self.args.seconds),
                   "--warmup", str(self.args.warmup if warmup is None else warmup),
                   "--json", report, *options]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode == 2:
            raise RuntimeError(" ".join(command) + "\n" + done.stderr)
        with open(report) as f:
            return json.load(f)

    def bench_rate(self, threads):
        """torqued_bench's rnea over `threads` threads: {"states_per_second", "cpu_us_per_state"}."""
        out = subprocess.run(
            [self.bench, "--urdf", self.urdf, "--threads", str(threads),
             "--benchmark_filter=^rnea(/|$)", f"--benchmark_min_time={self.args.seconds / 2}",
             "--benchmark_format=json"], capture_output=True, text=True, check=True).stdout
        rate = json.loads(out)["benchmarks"][0]["items_per_second"]
        return {"states_per_second": rate, "cpu_us_per_state": threads * 1e6 / rate}

    def machine_run(self, server, *options):
        """load_run() plus the machine's CPU time per call, client and server together
        (/proc/stat: every process on the machine, so run it on an otherwise quiet one)."""
        before = busy_seconds()
        r = self.load_run(server, *options, warmup=0)
        r["machine_cpu_us_per_call"] = (busy_seconds() - before) * 1e6 / max(1, r["calls"])
        return r


def busy_seconds():
    """CPU seconds the machine has spent busy (all CPUs, /proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def idle_fraction(since=None):
    """The machine's idle and busy jiffies now (/proc/stat), or the idle fraction of the CPU
    time since an earlier reading."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    now = (fields[3] + fields[4], sum(fields))
    if since is None:
        return now
    return (now[0] - since[0]) / max(1, now[1] - since[1])


def ceiling_states(echo, local, batch):
    """The most states per second this machine can serve: every CPU busy, each call costing at
    least its Echo (same bytes both ways, client and server: `echo`'s machine CPU per call) plus
    the in-process compute of its `batch` states."""
    per_call_us = echo["machine_cpu_us_per_call"] + batch * local["cpu_us_per_state"]
    return os.cpu_count() * 1e6 / per_call_us * batch


def paired(runner, repeats, first, second, measure):
    """Alternates two measurements `repeats` times; returns the per-repeat ratios
    measure(first) / measure(second) and the raw values."""
    ratios, raw = [], []
    for _ in range(repeats):
        a, b = first(), second()
        ratios.append(measure(a) / measure(b))
        raw.append((a, b))
    return ratios, raw


def verdict(name, ratios, bar, at_most, ceilings=None):
    """Prints and returns a scenario's median ratio against its bar. `ceilings`: per repeat, the
    highest ratio this machine allows whatever the service does (an "at least" bar), measured in
    the same run; a FAIL under a ceiling below the bar is the machine's."""
    median = statistics.median(ratios)
    ok = median <= bar if at_most else median >= bar
    spread = f"{min(ratios):.2f}..{max(ratios):.2f}"
    print(f"  {name:58s} {median:6.2f}  (repeats {spread})  bar {'<=' if at_most else '>='} "
          f"{bar:<4}  {'PASS' if ok else 'FAIL'}", flush=True)
    result = {"scenario": name, "ratio": median, "ratios": ratios, "bar": bar,
              "at_most": at_most, "pass": ok}
    if ceilings:
        ceiling = statistics.median(ceilings)
        result["ceiling"], result["ceilings"] = ceiling, ceilings
        print(f"  {'':58s} ceiling {ceiling:.2f} (repeats {min(ceilings):.2f}.."
              f"{max(ceilings):.2f}): {'below' if ceiling < bar else 'above'} the bar", flush=True)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "dev"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0, help="per measured run")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--soak-seconds", type=float, default=180.0)
    parser.add_argument("--quick", action="store_true",
                        help="1 repeat, 2 s runs, 20 s soak: a smoke test, not a measurement")
    args = parser.parse_args()
    if args.quick:
        args.repeats, args.seconds, args.warmup, args.soak_seconds = 1, 2.0, 0.5, 20.0
    os.makedirs(RESULTS, exist_ok=True)
    runner = Runner(args)
    data_root = tempfile.mkdtemp(prefix="torqued-scenarios-")
    verdicts, curves, efficiency, transport_bound = [], [], [], None
    print(f"model {runner.urdf}; {args.repeats} repeats of {args.seconds} s; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}", flush=True)
    try:
        server = Server(args.build, 2, data_root)
        p50 = lambda r: r["latency_us"]["p50"]
        p99 = lambda r: r["latency_us"]["p99"]
        rate = lambda r: r["calls_per_second"]

        # One call or message at a time: the client waits on its own completion queue, so the
        # thread its answer wakes sends the next request (the callback API adds a hand-off
        # between gRPC's threads on every event, on the client's side of each ratio alike).
        cq = "--completion-queue"
        print("unary InverseDynamics, 1 state, concurrency 1, against Echo of the same payload:",
              flush=True)
        ratios, raw = paired(runner, args.repeats, lambda: runner.load_run(server, cq),
                             lambda: runner.load_run(server, cq, "--echo"), p50)
        verdicts.append(verdict("unary p50 / Echo p50", ratios, 1.3, True))
        verdicts.append(verdict("unary p99 / Echo p99", [p99(a) / p99(b) for a, b in raw],
                                1.5, True))
        unary_rates = [rate(a) for a, _ in raw]

        print("Session, 1 state per message, one stream:", flush=True)
        ratios, raw = paired(runner, args.repeats,
                             lambda: runner.load_run(server, cq, "--session"),
                             lambda: runner.load_run(server, cq, "--session", "--echo"), p50)
        verdicts.append(verdict("Session p50 / Session Echo p50 (ping-pong)", ratios, 1.3, True))
        # A Session message cannot be answered faster than a Session Echo: the Echo's rate over
        # the unary call's is the most this ratio can reach on this transport and machine.
        verdicts.append(verdict("Session ping-pong rate / unary rate (concurrency 1)",
                                [rate(a) / u for (a, _), u in zip(raw, unary_rates)], 2.0,
                                False, [rate(b) / u for (_, b), u in zip(raw, unary_rates)]))
        ratios, _ = paired(runner, args.repeats,
                           lambda: runner.load_run(server, cq, "--session", "--pipeline", "4"),
                           lambda: runner.load_run(server, cq), rate)
        verdicts.append(verdict("Session rate, 4 messages in flight / unary rate (conc. 1)",
                                ratios, 2.0, False))

        print("batched InverseDynamics, 1,000 states per call, concurrency 2, 2 workers:", flush=True)
        states = lambda r: r["states_per_second"]
        batched = ("--batch", "1000", "--concurrency", "2", "--pool", "8")
        ratios, ceilings = [], []
        for _ in range(args.repeats):
            served = runner.load_run(server, *batched)
            floor = runner.machine_run(server, *batched, "--echo")
            local = runner.bench_rate(2)
            ratios.append(states(served) / local["states_per_second"])
            most = ceiling_states(floor, local, 1000)
            ceilings.append(most / local["states_per_second"])
            print(f"    {states(served):.0f} states/s served, {local['states_per_second']:.0f} "
                  f"in process; at most {most:.0f} on {os.cpu_count()} CPUs: Echo of the call "
                  f"{floor['machine_cpu_us_per_call']:.0f} us + rnea "
                  f"{1000 * local['cpu_us_per_state']:.0f} us of CPU per call", flush=True)
        verdicts.append(verdict("service states/s / torqued_bench rnea, 2 threads", ratios, 0.7,
                                False, ceilings))

        print("latency and throughput against batch size (unary, concurrency 2):", flush=True)
        for batch in (1, 10, 100, 1000):
            r = runner.load_run(server, "--batch", str(batch), "--concurrency", "2", "--pool", "8")
            curves.append({"batch": batch, "p50_us": p50(r), "p99_us": p99(r),
                           "states_per_second": states(r)})
            print(f"  batch {batch:5d}: p50 {p50(r):9.1f} us  p99 {p99(r):9.1f} us  "
                  f"{states(r):12.0f} states/s", flush=True)
        server.stop()

        servers = {w: Server(args.build, w, data_root) for w in (1, 2)}

        def with_cpu(workers, options, model=None):
            # The server's CPU cores used and its states per CPU-second, beside the throughput,
            # and how much of the machine was left idle: on 2 cores shared with the load
            # generator, the CPUs, not the server, decide how much a second worker can add.
            before, idle, start = servers[workers].cpu_seconds(), idle_fraction(), time.time()
            r = runner.load_run(servers[workers], *options, warmup=0, model=model)
            cores = (servers[workers].cpu_seconds() - before) / (time.time() - start)
            r["cores"], r["states_per_cpu_second"] = cores, r["states_per_second"] / cores
            r["idle"] = idle_fraction(idle)
            return r

        def show_cpu(raw):
            for a, b in raw:
                print(f"    server cores used {a['cores']:.2f} (2 workers) vs {b['cores']:.2f} "
                      f"(1 worker); states per CPU-second {a['states_per_cpu_second']:.0f} vs "
                      f"{b['states_per_cpu_second']:.0f}; machine idle {a['idle']:.0%} vs "
                      f"{b['idle']:.0%}", flush=True)

        heavy_name = os.path.basename(runner.heavy[1]).split(".")[0]
        print(f"worker scaling, compute-bound batched load ({heavy_name} ForwardDynamics, 1,000 "
              f"states, concurrency 4):", flush=True)
        heavy = ("--rpc", "ForwardDynamics", "--batch", "1000", "--concurrency", "4", "--pool", "8")
        ratios, raw = paired(runner, args.repeats,
                             lambda: with_cpu(2, heavy, runner.heavy),
                             lambda: with_cpu(1, heavy, runner.heavy), states)
        verdicts.append(verdict("states/s with 2 workers / with 1 worker", ratios, 1.7, False))
        show_cpu(raw)

        # ur5 InverseDynamics moves 144 bytes per 0.33 us of compute: there the transport, on
        # the CPUs the workers share with the load generator, decides, and the ceiling says how
        # far a second worker could go on this machine at best.
        print("worker scaling, transport-bound batched load (ur5 InverseDynamics, 1,000 states, "
              "concurrency 4):", flush=True)
        batched = ("--batch", "1000", "--concurrency", "4", "--pool", "8")
        ratios, raw = paired(runner, args.repeats, lambda: with_cpu(2, batched),
                             lambda: with_cpu(1, batched), states)
        ceilings = []
        for _, one_worker in raw:
            floor = runner.machine_run(servers[2], *batched, "--echo")
            ceilings.append(ceiling_states(floor, local, 1000) / states(one_worker))
        transport_bound = verdict("ur5 InverseDynamics, 2 / 1 workers (for reference)", ratios, 1.7,
                                  False, ceilings)
        show_cpu(raw)
        efficiency = [a["states_per_cpu_second"] / b["states_per_cpu_second"] for a, b in raw]
        print(f"    states per server CPU-second, 2 workers / 1 worker: "
              f"{statistics.median(efficiency):.2f} (repeats {min(efficiency):.2f}.."
              f"{max(efficiency):.2f}): the scaling the server would show with a core per "
              f"worker", flush=True)
        for s in servers.values():
            s.stop()

        print(f"saturation soak, {args.soak_seconds:.0f} s (unary, 100 states, concurrency 4):")
        server = Server(args.build, 2, data_root)
        runner.load_run(server, "--batch", "100", "--concurrency", "4", seconds=10, warmup=0)
        rss_before = server.rss_kib()
        soak = runner.load_run(server, "--batch", "100", "--concurrency", "4",
                               seconds=args.soak_seconds, warmup=0)
        rss_after = server.rss_kib()
        server.stop()
        errors = soak["errors"]
        print(f"  {soak['calls']} calls, {errors} errors {soak['codes']}, "
              f"RSS {rss_before} -> {rss_after} KiB", flush=True)
        verdicts.append(verdict("soak errors (count)", [float(errors)], 0, True))
        verdicts.append(verdict("soak RSS after / before", [rss_after / rss_before], 1.1, True))
    finally:
        for s in Server.started:
            s.stop()
        shutil.rmtree(data_root, ignore_errors=True)

    with open(os.path.join(RESULTS, "summary.json"), "w") as f:
        json.dump({"verdicts": verdicts, "batch_curve": curves, "model": runner.urdf,
                   "worker_scaling_per_cpu_second": efficiency,
                   "worker_scaling_transport_bound": transport_bound,
                   "seconds": args.seconds, "repeats": args.repeats}, f, indent=1)
    plot(curves)
    failed = [v["scenario"] + (" (the machine's ceiling is below the bar)"
                               if v.get("ceiling", float("inf")) < v["bar"] else "")
              for v in verdicts if not v["pass"]]
    print("all bars met" if not failed else f"{len(failed)} bar(s) missed: " + "; ".join(failed))
    return 1 if failed else 0


def plot(curves):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (apt-get install python3-matplotlib): no plot; "
              "the curve is in bench/results/summary.json")
        return
    batches = [c["batch"] for c in curves]
    fig, latency = plt.subplots(figsize=(7, 4.5))
    latency.loglog(batches, [c["p50_us"] for c in curves], "o-", label="p50 latency")
    latency.loglog(batches, [c["p99_us"] for c in curves], "s--", label="p99 latency")
    latency.set_xlabel("states per call")
    latency.set_ylabel("latency (µs)")
    throughput = latency.twinx()
    throughput.loglog(batches, [c["states_per_second"] for c in curves], "^-", color="C2",
                      label="states/s")
    throughput.set_ylabel("states per second")
    lines = latency.get_lines() + throughput.get_lines()
    latency.legend(lines, [line.get_label() for line in lines], loc="upper left")
    fig.suptitle("torqued InverseDynamics, unary, concurrency 2, loopback")
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "batch_size.png"), dpi=110)
    print("plot: bench/results/batch_size.png")


if __name__ == "__main__":
    sys.exit(main())
