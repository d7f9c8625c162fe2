#!/usr/bin/env python3
"""PyTorch's NCCL backend on whichever libnccl.so.2 the process loaded: NVIDIA's, or Cohort's
through LD_PRELOAD (issue 31).

Launch one process per rank with mpirun or torchrun (mpirun only launches: PyTorch's store
carries the NCCL id either way):
  mpirun -np N python contrib/torch-nccl-check.py [--per-host P] [--mode M] [BYTES...]
  torchrun --nproc-per-node N contrib/torch-nccl-check.py ...
  LD_PRELOAD=PREFIX/lib/cohort/nccl/libnccl.so.2 ...   (Cohort)
Every rank uses device 0 (several ranks on one GPU: MPS, and COHORT_ALLOW_SHARED_GPU=1 for
Cohort; NVIDIA's NCCL refuses them unless each has its own NCCL_HOSTID).  --per-host P > 0
puts rank r on fake host r // P (COHORT_HOST_ID and NCCL_HOSTID).

Modes:
  check    (default) every collective PyTorch maps onto NCCL, for fp32, bf16, fp16, int32,
           int64 and fp64, against a CPU reference; send/recv, batch_isend_irecv, new_group;
           a DistributedDataParallel loop of 50 steps against the same model trained in one
           process; then all_reduce timed per size: bytes, us per call (the slowest rank's
           mean), busbw (GB/s, nccl-tests' 2 (n - 1) / n).
  missing  the last rank joins the store but never creates its communicator; the others'
           eager init (device_id=) must fail within COHORT_INIT_TIMEOUT, naming it.
  memory   device memory the process group takes: cudaMemGetInfo before init_process_group
           and after the first all_reduce (the issue's measure), PyTorch's stream pool
           (which its process group makes with any library) apart from the library's share,
           then what each further kind of call adds.
Exit 1 when a check fails.
"""
import argparse
import os
import sys
import time

DTYPES = ["float32", "bfloat16", "float16", "int32", "int64", "float64"]


def environment(per_host):
    if "OMPI_COMM_WORLD_RANK" in os.environ:
        rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
        size = int(os.environ["OMPI_COMM_WORLD_SIZE"])
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(29500 + os.getppid() % 1000))
        os.environ["RANK"], os.environ["WORLD_SIZE"] = str(rank), str(size)
    else:  # torchrun
        rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if per_host > 0:
        os.environ["NCCL_HOSTID"] = "check-h%d" % (rank // per_host)
        os.environ["COHORT_HOST_ID"] = "check-h%d" % (rank // per_host)
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
        os.environ.setdefault("NCCL_IB_DISABLE", "1")
    return rank, size


def loaded_nccl():
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "libnccl" in line}
    return ", ".join(sorted(paths)) or "none"


class Checks:
    def __init__(self, torch, dist, rank):
        self.torch, self.dist, self.rank, self.wrong, self.count = torch, dist, rank, 0, 0

    def expect(self, name, ok):
        flag = self.torch.tensor([0 if ok else 1], device="cuda")
        self.dist.all_reduce(flag)
        bad = int(flag.item())
        self.wrong += bad
        self.count += 1
        if bad and self.rank == 0:
            print("WRONG on %d rank(s): %s" % (bad, name))
            sys.stdout.flush()


def check_dtype(torch, dist, rank, size, dtype, checks):
    """Inputs are small integers: exact in every type, so results compare exactly."""
    dev = torch.device("cuda", 0)
    n = 4099
    k = torch.arange(n, dtype=torch.int64) % 16

    def on(t):
        return t.to(dtype).to(dev)

    def same(got, want):
        return torch.equal(got.cpu(), want.to(dtype))

    name = str(dtype).replace("torch.", "")
    x = on(k + rank * size)  # every rank's sum is a multiple of size: avg is exact
    ref_sum = sum(k + r * size for r in range(size))
    for op, ref in (("sum", ref_sum),
                    ("max", k + (size - 1) * size),
                    ("avg", ref_sum // size)):
        y = x.clone()
        try:
            dist.all_reduce(y, op={"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX,
                                   "avg": dist.ReduceOp.AVG}[op])
        except (RuntimeError, ValueError) as e:  # PyTorch itself may refuse AVG on integers
            if rank == 0:
                print("# all_reduce %s %s refused by PyTorch: %s" % (op, name, str(e)[:100]))
            continue
        checks.expect("all_reduce %s %s" % (op, name), same(y, ref))
    b = on(k + 3) if rank == size - 1 else on(torch.zeros(n, dtype=torch.int64))
    dist.broadcast(b, src=size - 1)
    checks.expect("broadcast %s" % name, same(b, k + 3))
    whole = torch.empty(n * size, dtype=dtype, device=dev)
    dist.all_gather_into_tensor(whole, on(k + rank))
    checks.expect("all_gather_into_tensor %s" % name,
                  same(whole, torch.cat([k + r for r in range(size)])))
    src = on(torch.cat([k + rank + p for p in range(size)]))  # block p goes to rank p
    out = torch.empty(n, dtype=dtype, device=dev)
    dist.reduce_scatter_tensor(out, src)
    checks.expect("reduce_scatter_tensor %s" % name,
                  same(out, sum(k + r + rank for r in range(size))))
    a2a = torch.empty(n * size, dtype=dtype, device=dev)
    dist.all_to_all_single(a2a, on(torch.cat([k + 16 * rank + p for p in range(size)])))
    checks.expect("all_to_all_single %s" % name,
                  same(a2a, torch.cat([k + 16 * p + rank for p in range(size)])))
    dist.barrier()


def check_p2p(torch, dist, rank, size, checks):
    dev = torch.device("cuda", 0)
    n = 1 << 16
    if size > 1:
        if rank == 0:
            dist.send(torch.full((n,), 5.0, device=dev), dst=size - 1)
        if rank == size - 1:
            got = torch.empty(n, device=dev)
            dist.recv(got, src=0)
        checks.expect("send/recv", rank != size - 1 or bool((got == 5.0).all()))
    send = torch.full((n,), float(rank), device=dev)
    recv = torch.empty(n, device=dev)
    ops = [dist.P2POp(dist.isend, send, (rank + 1) % size),
           dist.P2POp(dist.irecv, recv, (rank - 1) % size)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    checks.expect("batch_isend_irecv ring", bool((recv == float((rank - 1) % size)).all()))
    evens = dist.new_group([p for p in range(size) if p % 2 == 0])
    ok = True
    if rank % 2 == 0:
        e = torch.ones(n, device=dev)
        dist.all_reduce(e, group=evens)
        ok = bool((e == len(range(0, size, 2))).all())
    checks.expect("new_group of even ranks", ok)


def check_ddp(torch, dist, rank, size, checks):
    """50 steps of DDP on shards of one batch against the same model on the whole batch."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    dev = torch.device("cuda", 0)
    gen = torch.Generator().manual_seed(1234)
    data = torch.randn(64 * size, 32, generator=gen)
    target = torch.randn(64 * size, 4, generator=gen)

    def model():
        torch.manual_seed(99)
        return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(),
                                   torch.nn.Linear(64, 4)).to(dev)

    alone, shared = model(), model()
    ddp = DDP(shared, device_ids=[0])
    opt_a = torch.optim.SGD(alone.parameters(), lr=0.05)
    opt_d = torch.optim.SGD(ddp.parameters(), lr=0.05)
    x_all, y_all = data.to(dev), target.to(dev)
    x_mine, y_mine = x_all[rank * 64:(rank + 1) * 64], y_all[rank * 64:(rank + 1) * 64]
    loss_fn = torch.nn.MSELoss()
    for _ in range(50):
        opt_a.zero_grad()
        loss_a = loss_fn(alone(x_all), y_all)
        loss_a.backward()
        opt_a.step()
        opt_d.zero_grad()
        loss_fn(ddp(x_mine), y_mine).backward()
        opt_d.step()
    with torch.no_grad():
        final_alone = loss_fn(alone(x_all), y_all).item()
        final_ddp = loss_fn(shared(x_all), y_all).item()
    close = abs(final_alone - final_ddp) <= 1e-5 * max(1.0, abs(final_alone))
    if rank == 0:
        print("# DDP 50 steps: loss %.7f, single process %.7f" % (final_ddp, final_alone))
    checks.expect("DistributedDataParallel 50 steps", close)


def timed(torch, dist, buf, iters):
    torch.cuda.synchronize()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(buf)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters


def mode_check(torch, dist, rank, size, sizes, init_s):
    checks = Checks(torch, dist, rank)
    if rank == 0:
        print("# libnccl loaded: %s" % loaded_nccl())
        print("# NCCL API %s, %d ranks; init_process_group %.3f s"
              % (".".join(map(str, torch.cuda.nccl.version())), size, init_s))
        sys.stdout.flush()
    for name in DTYPES:
        check_dtype(torch, dist, rank, size, getattr(torch, name), checks)
    check_p2p(torch, dist, rank, size, checks)
    check_ddp(torch, dist, rank, size, checks)
    if rank == 0:
        print("# %d checks, %d wrong" % (checks.count, checks.wrong))
        print("# bytes  time_us  busbw_GB/s")
    device = torch.device("cuda", 0)
    for nbytes in sizes:
        count = max(1, nbytes // 4)
        buf = torch.full((count,), 1.0, device=device)
        iters = 200 if nbytes <= 65536 else 10
        timed(torch, dist, buf, 3)
        seconds = torch.tensor([timed(torch, dist, buf, iters)], device=device)
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
        if rank == 0:
            t = seconds.item()
            busbw = 2 * (size - 1) / size * count * 4 / t / 1e9 if size > 1 else 0.0
            print("%10d %10.2f %10.2f" % (count * 4, t * 1e6, busbw))
            sys.stdout.flush()
    return checks.wrong == 0


def mode_missing(torch, dist, rank, size):
    from datetime import timedelta
    device = torch.device("cuda", 0)
    if rank == size - 1:  # joins the store (lazy init), never creates its communicator
        dist.init_process_group("nccl", timeout=timedelta(seconds=60))
        time.sleep(float(os.environ.get("CHECK_MISSING_SLEEP", "25")))
        os._exit(0)
    start = time.perf_counter()
    try:
        dist.init_process_group("nccl", device_id=device, timeout=timedelta(seconds=60))
        x = torch.ones(4, device=device)
        dist.all_reduce(x)
        torch.cuda.synchronize()
        print("rank %d: init succeeded without rank %d" % (rank, size - 1))
        return False
    except Exception as e:  # PyTorch wraps ncclGetLastError into its exception
        took = time.perf_counter() - start
        text = str(e)
        named = ("rank %d" % (size - 1)) in text
        print("rank %d: init failed after %.1f s; names rank %d: %s\n  %s"
              % (rank, took, size - 1, named, text.strip().replace("\n", "\n  ")[:1500]))
        sys.stdout.flush()
        os._exit(0 if named else 1)


def mode_memory(torch, dist, rank):
    device = torch.device("cuda", 0)
    x = torch.ones(1 << 20, device=device)  # the context and PyTorch's own pool first
    y = torch.ones(1 << 20, device=device, dtype=torch.bfloat16)
    gathered = torch.empty(dist_size() << 20, device=device)
    torch.cuda.synchronize()
    free_before, total = torch.cuda.mem_get_info(device)
    # PyTorch's own stream pool (32 streams per priority, made by the first pool stream, which
    # ProcessGroupNCCL takes at its creation whatever the library): measured apart, so that
    # the library's share shows; the process group's figure still counts it, as the issue's
    # measure (before init_process_group, after the first all_reduce) does.
    steps = [("PyTorch's stream pool", lambda: torch.cuda.Stream(device)),
             ("creation", lambda: dist.init_process_group("nccl", device_id=device)),
             ("all_reduce fp32", lambda: dist.all_reduce(x)),
             ("all_reduce bf16", lambda: dist.all_reduce(y)),
             ("broadcast", lambda: dist.broadcast(x, 0)),
             ("all_gather", lambda: dist.all_gather_into_tensor(gathered, x)),
             ("barrier", lambda: dist.barrier())]
    taken, first_all_reduce = [], None
    last = free_before
    for name, call in steps:
        call()
        torch.cuda.synchronize()
        free, _ = torch.cuda.mem_get_info(device)
        taken.append("%s %.1f" % (name, (last - free) / 2**20))
        last = free
        if name == "all_reduce fp32":
            first_all_reduce = free
    if rank == 0:
        print("# libnccl loaded: %s" % loaded_nccl())
        pool, creation, first = (float(t.split()[-1]) for t in taken[:3])
        print("device memory taken by the process group: %.1f MiB (%.1f by PyTorch's stream "
              "pool, %.1f by its creation, %.1f more by the first all_reduce); the library's "
              "share: %.1f MiB" % ((free_before - first_all_reduce) / 2**20, pool, creation,
                                   first, creation + first))
        print("MiB taken by each step: %s; %.1f in all" % ("; ".join(taken),
                                                       (free_before - last) / 2**20))
    dist.destroy_process_group()
    return True


def dist_size():
    return int(os.environ.get("WORLD_SIZE", "1"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-host", type=int, default=0)
    parser.add_argument("--mode", default="check", choices=["check", "missing", "memory"])
    parser.add_argument("sizes", nargs="*", type=int)
    args = parser.parse_args()
    rank, size = environment(args.per_host)
    import torch
    import torch.distributed as dist

    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    if args.mode == "missing":
        sys.exit(0 if mode_missing(torch, dist, rank, size) else 1)
    if args.mode == "memory":
        sys.exit(0 if mode_memory(torch, dist, rank) else 1)
    start = time.perf_counter()
    dist.init_process_group("nccl", device_id=device)
    init_s = time.perf_counter() - start
    ok = mode_check(torch, dist, rank, size, args.sizes or [8, 1 << 20, 64 << 20, 256 << 20],
                    init_s)
    dist.destroy_process_group()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
