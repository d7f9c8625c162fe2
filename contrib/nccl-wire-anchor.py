#!/usr/bin/env python3
"""NCCL's allreduce between fake hosts over its socket transport: the anchor that
contrib/wire-check.sh puts beside Cohort's figures (issue 29).

Run one process per rank under mpirun, with PyTorch's interpreter (it loads NCCL):
  mpirun -np 2 python contrib/nccl-wire-anchor.py PER_HOST [BYTES...]
Each rank gets NCCL_HOSTID=anchor-h<rank / PER_HOST>, so ranks of different fake hosts talk
over NCCL's socket transport on the loopback (NCCL_SOCKET_IFNAME=lo); all ranks use device 0
(several ranks on one GPU need MPS, and different host ids: NCCL refuses two ranks of one host
on one GPU).  Prints one row per size: bytes, time per call (us, mean of the slowest rank),
busbw (GB/s, nccl-tests' 2 (n - 1) / n), and exits 1 if a result is wrong.
"""
import os
import sys
import time


def environment(per_host):
    rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
    size = int(os.environ["OMPI_COMM_WORLD_SIZE"])
    os.environ["NCCL_HOSTID"] = "anchor-h%d" % (rank // per_host)
    os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    os.environ.setdefault("NCCL_IB_DISABLE", "1")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getppid() % 1000))
    os.environ["RANK"], os.environ["WORLD_SIZE"] = str(rank), str(size)
    return rank, size


def timed(dist, torch, buf, iters):
    torch.cuda.synchronize()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(buf)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters


def main():
    per_host = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    sizes = [int(s) for s in sys.argv[2:]] or [8, 16 << 20, 64 << 20]
    rank, size = environment(per_host)
    import torch
    import torch.distributed as dist

    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    wrong = 0
    if rank == 0:
        print("# NCCL %s allreduce fp32 sum, %d ranks, %d per fake host (NCCL_HOSTID)"
              % (".".join(map(str, torch.cuda.nccl.version())), size, per_host))
        print("# bytes  time_us  busbw_GB/s  wrong")
    for nbytes in sizes:
        count = max(1, nbytes // 4)
        buf = torch.full((count,), float(rank + 1), device=device)
        iters = 200 if nbytes <= 65536 else 20
        timed(dist, torch, buf, 5)  # warm-up (the values grow; checked below on a fresh one)
        seconds = torch.tensor([timed(dist, torch, buf, iters)], device=device)
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
        check = torch.full((count,), float(rank + 1), device=device)
        dist.all_reduce(check)
        bad_t = (check != size * (size + 1) / 2).sum().reshape(1)
        dist.all_reduce(bad_t)
        bad = int(bad_t.item())
        wrong += bad
        if rank == 0:
            t = seconds.item()
            busbw = 2 * (size - 1) / size * count * 4 / t / 1e9
            print("%10d %10.2f %10.2f %6d" % (count * 4, t * 1e6, busbw, bad))
            sys.stdout.flush()
    dist.destroy_process_group()
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
