"""Timing on the GPU shared by the peer benchmarks in bench/gpu/."""
import torch


def median_ms(fn, runs):
    """Median milliseconds of `runs` calls of fn after one warm-up, each timed by CUDA events."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]
