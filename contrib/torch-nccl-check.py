#!/usr/bin/env python3
"""PyTorch's NCCL backend on whichever libnccl.so.2 the process loaded: NVIDIA's, or Cohort's
through LD_PRELOAD (issue 31).  Checks every collective PyTorch maps onto NCCL, then times
all_reduce.

Run one process per rank (mpirun only launches; PyTorch's store carries the NCCL id):
  mpirun -np N python contrib/torch-nccl-check.py PER_HOST [BYTES...]
  LD_PRELOAD=PREFIX/lib/cohort/nccl/libnccl.so.2 mpirun ... (Cohort)
Every rank uses device 0 (several ranks on one GPU: MPS, and COHORT_ALLOW_SHARED_GPU=1 for
Cohort; NVIDIA's NCCL refuses them unless each has its own NCCL_HOSTID).  PER_HOST > 0 puts
rank r on fake host r // PER_HOST (COHORT_HOST_ID and NCCL_HOSTID); 0 keeps one host.
Prints the library loaded, one line per check, and one row per size: bytes, time per call
(us, the slowest rank's mean), busbw (GB/s, nccl-tests' 2 (n - 1) / n).  Exit 1 on a wrong
result.
"""
import os
import sys
import time


def environment(per_host):
    rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
    size = int(os.environ["OMPI_COMM_WORLD_SIZE"])
    if per_host > 0:
        os.environ["NCCL_HOSTID"] = "check-h%d" % (rank // per_host)
        os.environ["COHORT_HOST_ID"] = "check-h%d" % (rank // per_host)
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
        os.environ.setdefault("NCCL_IB_DISABLE", "1")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getppid() % 1000))
    os.environ["RANK"], os.environ["WORLD_SIZE"] = str(rank), str(size)
    return rank, size


def loaded_nccl():
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "libnccl" in line}
    return ", ".join(sorted(paths)) or "none"


class Checks:
    def __init__(self, rank):
        self.rank, self.wrong = rank, 0

    def expect(self, name, ok):
        import torch.distributed as dist
        import torch
        flag = torch.tensor([0 if ok else 1], device="cuda")
        dist.all_reduce(flag)
        bad = int(flag.item())
        self.wrong += bad
        if self.rank == 0:
            print("%-40s %s" % (name, "ok" if bad == 0 else "WRONG on %d rank(s)" % bad))
            sys.stdout.flush()


def run_checks(torch, dist, rank, size, checks):
    dev = torch.device("cuda", 0)
    n = 1 << 16
    x = torch.arange(n, device=dev, dtype=torch.float32) + rank
    dist.all_reduce(x)
    want = torch.arange(n, device=dev, dtype=torch.float32) * size + size * (size - 1) / 2
    checks.expect("all_reduce sum fp32", torch.equal(x, want))
    y = torch.full((n,), float(rank), device=dev, dtype=torch.bfloat16)
    dist.all_reduce(y, op=dist.ReduceOp.AVG)
    checks.expect("all_reduce avg bf16", bool(((y.float() - (size - 1) / 2).abs() < 0.02).all()))
    z = torch.full((n,), rank, device=dev, dtype=torch.int64)
    dist.all_reduce(z, op=dist.ReduceOp.MAX)
    checks.expect("all_reduce max int64", bool((z == size - 1).all()))
    b = torch.full((n,), 7.0 if rank == size - 1 else 0.0, device=dev)
    dist.broadcast(b, src=size - 1)
    checks.expect("broadcast", bool((b == 7.0).all()))
    part = torch.full((n,), float(rank), device=dev)
    whole = torch.empty(n * size, device=dev)
    dist.all_gather_into_tensor(whole, part)
    checks.expect("all_gather_into_tensor",
                  torch.equal(whole, torch.arange(size, device=dev).float().repeat_interleave(n)))
    src = torch.arange(n * size, device=dev, dtype=torch.float32)
    out = torch.empty(n, device=dev)
    dist.reduce_scatter_tensor(out, src)
    checks.expect("reduce_scatter_tensor",
                  torch.equal(out, (torch.arange(n, device=dev).float() + rank * n) * size))
    a2a_in = torch.arange(size, device=dev, dtype=torch.float32).repeat_interleave(n) + 100 * rank
    a2a_out = torch.empty(n * size, device=dev)
    dist.all_to_all_single(a2a_out, a2a_in)
    want = (torch.arange(size, device=dev).float() * 100 + rank).repeat_interleave(n)
    checks.expect("all_to_all_single", torch.equal(a2a_out, want))
    send = torch.full((n,), float(rank), device=dev)
    recv = torch.empty(n, device=dev)
    ops = [dist.P2POp(dist.isend, send, (rank + 1) % size),
           dist.P2POp(dist.irecv, recv, (rank - 1) % size)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    checks.expect("batch_isend_irecv ring", bool((recv == float((rank - 1) % size)).all()))
    r = torch.full((n,), float(rank + 1), device=dev)
    dist.reduce(r, dst=0)
    checks.expect("reduce to 0", rank != 0 or bool((r == size * (size + 1) / 2).all()))
    dist.barrier()
    checks.expect("barrier", True)
    evens = dist.new_group([p for p in range(size) if p % 2 == 0])
    if rank % 2 == 0:
        e = torch.ones(n, device=dev)
        dist.all_reduce(e, group=evens)
        ok = bool((e == len(range(0, size, 2))).all())
    else:
        ok = True
    checks.expect("new_group of even ranks", ok)


def timed(torch, dist, buf, iters):
    torch.cuda.synchronize()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(buf)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters


def main():
    per_host = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    sizes = [int(s) for s in sys.argv[2:]] or [8, 1 << 20, 64 << 20, 256 << 20]
    rank, size = environment(per_host)
    import torch
    import torch.distributed as dist

    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    start = time.perf_counter()
    dist.init_process_group("nccl", device_id=device)
    init_s = time.perf_counter() - start
    checks = Checks(rank)
    if rank == 0:
        print("# libnccl loaded: %s" % loaded_nccl())
        print("# NCCL API %s, %d ranks, %s; init_process_group %.3f s"
              % (".".join(map(str, torch.cuda.nccl.version())), size,
                 "%d per fake host" % per_host if per_host else "one host", init_s))
        sys.stdout.flush()
    run_checks(torch, dist, rank, size, checks)
    if rank == 0:
        print("# bytes  time_us  busbw_GB/s")
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
    dist.destroy_process_group()
    sys.exit(1 if checks.wrong else 0)


if __name__ == "__main__":
    main()
