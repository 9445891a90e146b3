"""The percentile bootstrap that kvfuse's report scripts share (compare_sweeps, eval_summary, compress_report). It
takes its percentiles as lib/eval/bootstrap.cpp does, so an interval a script prints and one `kvrun eval`'s report
prints rest on the same rule: the sorted statistics of the resamples that have one, at index round(q * (n - 1))."""
import math
import random


def resamples(items, count, seed):
    """`count` resamples of `items` with replacement, each as long as `items`, drawn by random.Random(seed). Several
    statistics computed over the same resamples give paired intervals."""
    rng = random.Random(seed)
    return [[rng.choice(items) for _ in items] for _ in range(count)]


def percentile_interval(values, level=0.95):
    """(low, high): the central `level` of `values`, NaN left out (a resample can leave a ratio undefined); NaNs if
    nothing is left."""
    values = sorted(v for v in values if v == v)
    if not values:
        return float("nan"), float("nan")
    at = lambda q: values[math.floor(q * (len(values) - 1) + 0.5)]  # C++'s llround for q >= 0
    return at((1 - level) / 2), at(1 - (1 - level) / 2)


def bootstrap(items, statistic, count, seed, level=0.95):
    """The percentile interval of `statistic` over `count` resamples of `items`."""
    return percentile_interval([statistic(s) for s in resamples(items, count, seed)], level)
